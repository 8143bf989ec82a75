#!/usr/bin/env bash
# Runs compare.sh several times (invocations) and prints, for every row, the ratio ours/OMPI of
# each invocation (itself the median of that invocation's per-pair ratios), the median over the
# invocations, and how many invocations were beyond the row's target: the rule of issue 13
# (met: the median within target; missed: beyond it in at least 4 of 5 invocations; otherwise a
# tie).
#
#   benches/c/rounds.sh [--invocations N] [compare.sh options...]
#
# Defaults: 5 invocations of `compare.sh --pairs 9`. Targets (ours/OMPI, time rows): broadcast
# 8 B - 8 KiB at 4 and 8 PEs <= 1.5; fetch_add, compare_swap latency <= 1.0; add rate >= 1.0;
# barrier at 4-64 PEs <= 1.0; our 2-PE barrier <= 1.5x the spinning barrier of the same pair.
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=5
if [ "${1:-}" = --invocations ]; then n=${2:?--invocations needs a number}; shift 2; fi
args=("$@")
printf '%s\n' "${args[@]}" | grep -q -- '--pairs' || args+=(--pairs 9)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/shmem-rounds.XXXXXX")
for i in $(seq 1 "$n"); do
    echo "rounds.sh: invocation $i of $n" >&2
    "$HERE/compare.sh" "${args[@]}" >"$OUT/inv$i.txt" 2>"$OUT/inv$i.err"
done
python3 - "$OUT" "$n" <<'PY'
import re, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
ratios, spin = {}, []
for i in range(1, n + 1):
    for line in open(f"{out}/inv{i}.txt", errors="replace"):
        f = line.split()
        if len(f) >= 8 and re.match(r"^[A-Za-z_0-9]+$", f[0]) and re.match(r"^\d+\.\d+$", f[6]):
            ratios.setdefault(f[0], {})[i] = float(f[6])
        m = re.search(r"barrier_np2 / the spinning barrier, median of \d+ per-pair ratios: ([\d.]+)", line)
        if m:
            spin.append(float(m.group(1)))

def target(row):
    if re.match(r"bcast_(8|1K)_np(4|8)$", row): return ("<=", 1.5)
    if row in ("amo_fetch_add_lat", "amo_compare_swap_lat"): return ("<=", 1.0)
    if row == "amo_add_rate": return (">=", 1.0)
    m = re.match(r"barrier_np(\d+)$", row)
    if m and int(m.group(1)) >= 4: return ("<=", 1.0)
    return None

print(f"ours/OMPI per invocation (median of its per-pair ratios), over {n} invocations; "
      "verdict by issue 13's rule")
print(f"{'row':<24} {'per invocation':<40} {'median':>7}  target   beyond  verdict")
for row, by in ratios.items():
    vals = [by[i] for i in sorted(by)]
    med = statistics.median(vals)
    t = target(row)
    verdict, beyond, tgt = "", "", ""
    if t:
        op, lim = t
        bad = [v for v in vals if (v > lim if op == "<=" else v < lim)]
        ok = med <= lim if op == "<=" else med >= lim
        verdict = "met" if ok else ("missed" if len(bad) >= 4 else "tie")
        beyond, tgt = f"{len(bad)}/{len(vals)}", f"{op} {lim}"
    print(f"{row:<24} {' '.join(f'{v:.2f}' for v in vals):<40} {med:>7.2f}  {tgt:<7}  {beyond:>6}  {verdict}")
if spin:
    med = statistics.median(spin)
    bad = sum(v > 1.5 for v in spin)
    verdict = "met" if med <= 1.5 else ("missed" if bad >= 4 else "tie")
    print(f"{'barrier_np2 / spinning':<24} {' '.join(f'{v:.2f}' for v in spin):<40} {med:>7.2f}  <= 1.5   "
          f"{bad}/{len(spin)}  {verdict}")
print(f"raw outputs: {out}")
PY
