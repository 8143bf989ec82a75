#!/usr/bin/env bash
# Build the OpenSHMEM C benchmarks in benches/c with this project's oshcc and with Open MPI's,
# run both on the same PE counts in interleaved A/B pairs, and print one table:
#   row, unit, ours, Open MPI, ours/OMPI, which is better, and the matching calibration figure
#   (memcpy of the same size, or the cache-line round trip) measured in the same run.
#
# Usage: benches/c/compare.sh [--quick] [--pairs N] [--runs LIST] [--team] [--ours-only] [--keep]
#   --quick      fewer repetitions (programs get -q), barrier only up to 8 PEs: about 1 minute
#   --pairs N    A/B pairs per row (default 5, quick 3); each row is the median over the pairs,
#                and ours/OMPI the median of the per-pair ratios
#   --runs LIST  only these runs, "PROGRAM NPES" separated by commas ("osh_coll 4,osh_amo 2")
#   --team       time our library's OpenSHMEM 1.5 team collectives even when the 1.4 active-set
#                routines link (by default ours uses the same active-set form as Open MPI 4.1)
#   --ours-only  do not run Open MPI even if it is installed
#   --keep       keep the build and output directory (raw outputs, human tables, stderr)
# Environment: OMPI_CC (default /usr/bin/oshcc), OMPI_RUN (default /usr/bin/oshrun),
#   OMPI_RUN_ARGS (default "--allow-run-as-root --oversubscribe"), CC (calibration, default cc),
#   RUN_TIMEOUT (seconds per run, default 180).
# Needs: bash, python3, a release build of this repository (target/release/oshcc, oshrun, and
#   shmem-calls for the C ABI against the Rust API: cargo build --release -p shmem-c -p shmem-benches).
# The last table compares one call through the C ABI (osh_calls.c, 1 PE) with the same call
# through the Rust API (shmem-calls OP N time), interleaved, per pair: the C path's target is
# at most 1.1x the Rust API's for an 8-byte put and a fetch_add.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OURS_CC="$ROOT/target/release/oshcc"
OURS_RUN="$ROOT/target/release/oshrun"
OMPI_CC=${OMPI_CC:-/usr/bin/oshcc}
OMPI_RUN=${OMPI_RUN:-/usr/bin/oshrun}
OMPI_RUN_ARGS=${OMPI_RUN_ARGS:---allow-run-as-root --oversubscribe}
CC=${CC:-cc}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}
CFLAGS=(-std=c11 -O2 -Wall -Wextra)

quick=0 pairs="" team=0 ours_only=0 keep=0 only=""
while [ $# -gt 0 ]; do
    case "$1" in
    --quick | -q) quick=1 ;;
    --pairs) pairs=${2:?--pairs needs a number}; shift ;;
    --team) team=1 ;;
    --ours-only) ours_only=1 ;;
    --keep) keep=1 ;;
    --runs) only=${2:?--runs needs a list}; shift ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$pairs" ] || pairs=$((quick ? 3 : 5))
command -v python3 >/dev/null || { echo "compare.sh: needs python3" >&2; exit 2; }
for f in "$OURS_CC" "$OURS_RUN"; do
    [ -x "$f" ] || { echo "compare.sh: $f is missing: cargo build --release -p shmem-c" >&2; exit 2; }
done
have_ompi=0
if [ "$ours_only" = 0 ] && [ -x "$OMPI_CC" ] && [ -x "$OMPI_RUN" ]; then have_ompi=1; fi
LIBS=(ours)
[ "$have_ompi" = 1 ] && LIBS+=(ompi)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/shmem-benches-c.XXXXXX")
if [ "$keep" = 0 ]; then trap 'rm -rf "$WORK"' EXIT; fi
mkdir -p "$WORK/bin" "$WORK/out"
NOTES="$WORK/notes.txt"
: >"$NOTES"
note() { printf '%s\n' "$*" >>"$NOTES"; }
start=$(date +%s)
load0=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')

# ---- build -------------------------------------------------------------------------------
PROGS=(osh_lat osh_bw osh_amo osh_coll osh_barrier)
RUST_CALLS="$ROOT/target/release/shmem-calls"
build() { # lib prog [extra flags...]; returns the compiler's status, keeps its messages
    local lib=$1 prog=$2; shift 2
    local cc=$OURS_CC; [ "$lib" = ompi ] && cc=$OMPI_CC
    "$cc" "${CFLAGS[@]}" "$@" -o "$WORK/bin/$lib.$prog" "$HERE/$prog.c" >"$WORK/bin/$lib.$prog.log" 2>&1
}
failed_build=()
for lib in "${LIBS[@]}"; do
    for prog in "${PROGS[@]}"; do
        if [ "$lib" = ours ] && [ "$prog" = osh_coll ] && [ "$team" = 0 ]; then
            if build ours osh_coll -DUSE_ACTIVE_SET; then
                note "ours: osh_coll built with -DUSE_ACTIVE_SET (1.4 active-set routines, as Open MPI)"
                [ -s "$WORK/bin/ours.osh_coll.log" ] && note "ours: warnings: $(head -c 600 "$WORK/bin/ours.osh_coll.log")"
                continue
            fi
            note "ours: active-set routines did not build, so ours times the 1.5 team collectives:"
            note "$(grep -E 'error|undefined' "$WORK/bin/ours.osh_coll.log" | sed 's/^/    /' | head -8)"
        fi
        if ! build "$lib" "$prog"; then
            failed_build+=("$lib.$prog")
            note "$lib: $prog did not build:"
            note "$(head -15 "$WORK/bin/$lib.$prog.log" | sed 's/^/    /')"
        elif [ -s "$WORK/bin/$lib.$prog.log" ]; then
            note "$lib: $prog built with warnings:"
            note "$(head -15 "$WORK/bin/$lib.$prog.log" | sed 's/^/    /')"
        fi
    done
done
if ! build ours osh_calls; then
    note "ours: osh_calls did not build: $(head -5 "$WORK/bin/ours.osh_calls.log")"
fi
[ -x "$RUST_CALLS" ] || note "no $RUST_CALLS: the C ABI against the Rust API is not measured (cargo build --release -p shmem-benches)"
if ! "$CC" "${CFLAGS[@]}" -o "$WORK/bin/calib" "$HERE/calib.c" >"$WORK/bin/calib.log" 2>&1; then
    note "calib did not build: $(head -5 "$WORK/bin/calib.log")"
fi

# ---- run -----------------------------------------------------------------------------------
RUNS=("osh_lat 2" "osh_bw 2" "osh_amo 2" "osh_coll 2" "osh_coll 4")
if [ "$quick" = 1 ]; then BARRIER_NP=(2 4 8); else BARRIER_NP=(2 4 8 16 32 64); fi
for n in "${BARRIER_NP[@]}"; do RUNS+=("osh_barrier $n"); done
if [ -n "$only" ]; then IFS=',' read -r -a RUNS <<<"$only"; fi
qflag=(); [ "$quick" = 1 ] && qflag=(-q)

run_one() { # lib prog npes pair
    local lib=$1 prog=$2 n=$3 p=$4
    local exe="$WORK/bin/$lib.$prog" out="$WORK/out/$lib.$prog.np$n.p$p"
    [ -x "$exe" ] || return 0
    local rc=0
    if [ "$lib" = ours ]; then
        "$OURS_RUN" -n "$n" --timeout "$RUN_TIMEOUT" -- "$exe" "${qflag[@]}" \
            >"$out.txt" 2>"$out.err" </dev/null || rc=$?
    else
        # shellcheck disable=SC2086
        timeout -k 5 "$RUN_TIMEOUT" "$OMPI_RUN" $OMPI_RUN_ARGS -np "$n" "$exe" "${qflag[@]}" \
            >"$out.txt" 2>"$out.err" </dev/null || rc=$?
    fi
    echo "$rc" >"$out.rc"
}

total=$((pairs * ${#RUNS[@]}))
echo "compare.sh: ${#RUNS[@]} runs x $pairs pairs ($([ "$have_ompi" = 1 ] && echo "ours and Open MPI, interleaved" || echo "ours only: Open MPI not found")), quick=$quick; work dir $WORK" >&2
k=0
for p in $(seq 1 "$pairs"); do
    [ -x "$WORK/bin/calib" ] && "$WORK/bin/calib" "${qflag[@]}" >"$WORK/out/calib.p$p.txt" 2>&1
    for r in "${RUNS[@]}"; do
        set -- $r
        k=$((k + 1))
        printf '\r  pair %d/%d, run %d/%d: %-12s np %-3s' "$p" "$pairs" "$k" "$total" "$1" "$2" >&2
        if [ $((p % 2)) = 1 ]; then order=("${LIBS[@]}"); else order=(); for ((i = ${#LIBS[@]} - 1; i >= 0; i--)); do order+=("${LIBS[i]}"); done; fi
        for lib in "${order[@]}"; do run_one "$lib" "$1" "$2" "$p"; done
    done
done
# The C ABI against the Rust API: one call each, on one PE, in interleaved pairs.
calls_pairs=$((pairs < 9 ? 9 : pairs))
if [ -x "$WORK/bin/ours.osh_calls" ] && [ -x "$RUST_CALLS" ]; then
    n_calls=$((quick ? 2000000 : 5000000))
    for p in $(seq 1 "$calls_pairs"); do
        printf '\r  C ABI vs Rust API: pair %d/%d%-30s' "$p" "$calls_pairs" "" >&2
        c_run() { "$OURS_RUN" -n 1 --timeout "$RUN_TIMEOUT" -- "$WORK/bin/ours.osh_calls" "${qflag[@]}" >"$WORK/out/calls.c.p$p.txt" 2>&1 </dev/null; }
        r_run() { for op in put fetch_add; do "$RUST_CALLS" "$op" "$n_calls" time; done >"$WORK/out/calls.rust.p$p.txt" 2>&1 </dev/null; }
        if [ $((p % 2)) = 1 ]; then c_run; r_run; else r_run; c_run; fi
    done
fi
printf '\r%-70s\r' "" >&2
elapsed=$(($(date +%s) - start))

# ---- table ---------------------------------------------------------------------------------
python3 - "$WORK" "$pairs" "$have_ompi" "$elapsed" "$quick" "$load0" "${RUNS[@]}" <<'PY'
import glob, os, re, statistics, sys

work, pairs, have_ompi, elapsed, quick = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5] == "1"
load0 = sys.argv[6]
runs = [r.split() for r in sys.argv[7:]]
libs = ["ours", "ompi"] if have_ompi else ["ours"]

def parse(path):
    res, info, checks, done = [], [], [], False
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return res, info, checks, done
    for ln in lines:
        f = ln.split()
        if not f:
            continue
        if f[0] == "RESULT" and len(f) >= 4:
            try:
                res.append((f[1], float(f[2]), f[3]))
            except ValueError:
                pass
        elif f[0] == "INFO":
            info.append(" ".join(f[1:]))
        elif f[0] == "CHECK":
            checks.append(" ".join(f[1:]))
        elif f[0] == "DONE":
            done = True
    return res, info, checks, done

vals = {lib: {} for lib in libs}   # lib -> row -> [values]
units, order = {}, []
infos = {lib: [] for lib in libs}
problems = []
late_exit = {}  # (lib, status) -> runs that failed only after printing DONE (in shmem_finalize)
for prog, n in runs:
    for p in range(1, pairs + 1):
        for lib in libs:
            base = f"{work}/out/{lib}.{prog}.np{n}.p{p}"
            if not os.path.exists(base + ".txt"):
                continue
            res, info, checks, done = parse(base + ".txt")
            rc = open(base + ".rc").read().strip() if os.path.exists(base + ".rc") else "?"
            for row, v, u in res:
                if row not in units:
                    units[row] = u
                    order.append(row)
                vals[lib].setdefault(row, []).append(v)
            for i in info:
                i = re.sub(r", \d+ PEs.*", "", i)
                if i not in infos[lib]:
                    infos[lib].append(i)
            for c in checks:
                if " ok" not in c and not c.endswith("ok"):
                    problems.append(f"{lib} {prog} np{n} pair {p}: CHECK {c}")
            if not done:
                err = ""
                try:
                    err = " | ".join(open(base + ".err", errors="replace").read().strip().splitlines()[-3:])
                except OSError:
                    pass
                problems.append(f"{lib} {prog} np{n} pair {p}: no DONE line (exit {rc}) {err[:300]}")
            elif rc not in ("0", "?"):
                late_exit.setdefault((lib, rc), []).append(f"{prog}/np{n}")

# calibration
cal = {}
for path in sorted(glob.glob(f"{work}/out/calib.p*.txt")):
    for row, v, u in parse(path)[0]:
        cal.setdefault(row, []).append(v)
calm = {k: statistics.median(v) for k, v in cal.items()}

def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000: return f"{v:.0f}"
    if a >= 100: return f"{v:.1f}"
    if a >= 10: return f"{v:.2f}"
    if a >= 1: return f"{v:.3f}"
    if a >= 0.01: return f"{v:.4f}"
    return f"{v:.2g}"

def spread(xs):
    if not xs or len(xs) < 2: return ""
    m = statistics.median(xs)
    return f"{100 * (max(xs) - min(xs)) / m:.0f}%" if m else ""

rt, rtp = calm.get("rt_unpinned"), calm.get("rt_pinned")
def calib_for(row):
    m = re.match(r"(put|get)_lat_(\w+)$", row)
    if m and f"memcpy_lat_{m.group(2)}" in calm:
        return f"memcpy {fmt(calm['memcpy_lat_' + m.group(2)])} us"
    m = re.match(r"\w+_bw_(\w+)$", row)
    if m and f"memcpy_bw_{m.group(1)}" in calm:
        return f"memcpy {fmt(calm['memcpy_bw_' + m.group(1)])} GB/s"
    m = re.match(r"\w+_mr_(\w+)$", row)
    if m and f"memcpy_lat_{m.group(1)}" in calm:
        return f"memcpy {fmt(1 / calm['memcpy_lat_' + m.group(1)])} M/s"
    if rt is not None and re.match(r"(amo_\w+_lat|barrier_np\d+|coll_barrier_np\d+)$", row):
        return f"RT {fmt(rtp)}/{fmt(rt)} us"
    return ""

# message-rate rows only up to 1 KiB and bandwidth rows from 1 KiB (the ratio of the two is the
# same at one size; the programs print both for every size)
def shown(row):
    m = re.match(r"\w+_(bw|mr)_(\d+)([KM]?)$", row)
    if not m:
        return True
    size = int(m.group(2)) * {"": 1, "K": 1024, "M": 1 << 20}[m.group(3)]
    return size <= 1024 if m.group(1) == "mr" else size >= 1024

hdr = ["row", "unit", "ours", "±", "Open MPI", "±", "ours/OMPI", "better", "calibration (same run)"]
if not have_ompi:
    hdr = ["row", "unit", "ours", "±", "calibration (same run)"]
table = []
for row in order:
    if not shown(row):
        continue
    u = units[row]
    o = statistics.median(vals["ours"][row]) if vals["ours"].get(row) else None
    line = [row, u, fmt(o), spread(vals["ours"].get(row, []))]
    if have_ompi:
        c = statistics.median(vals["ompi"][row]) if vals["ompi"].get(row) else None
        # The median of the per-pair ratios (each pair ran both libraries back to back).
        po, pc = vals["ours"].get(row, []), vals["ompi"].get(row, [])
        per_pair = [a / b for a, b in zip(po, pc) if b] if len(po) == len(pc) else []
        ratio = statistics.median(per_pair) if per_pair else (o / c if o is not None and c else None)
        better = ""
        if ratio is not None:
            lower_better = u == "us"
            if 0.9 <= ratio <= 1.1: better = "~"
            elif (ratio < 1) == lower_better: better = "ours"
            else: better = "OMPI"
        line += [fmt(c), spread(vals["ompi"].get(row, [])), f"{ratio:.2f}" if ratio is not None else "-", better]
    line.append(calib_for(row))
    table.append(line)

w = [max(len(h), *(len(l[i]) for l in table)) if table else len(h) for i, h in enumerate(hdr)]
right = {2, 3, 4, 5, 6} if have_ompi else {2, 3}
def show(cells):
    print("  ".join(c.rjust(w[i]) if i in right else c.ljust(w[i]) for i, c in enumerate(cells)).rstrip())
what = f"ours (target/release) vs Open MPI; median of {pairs} interleaved pair(s) per row" if have_ompi \
    else f"ours (target/release) only, Open MPI not run; median of {pairs} run(s) per row"
print(f"OpenSHMEM C benchmarks: {what}{' (quick)' if quick else ''}; {elapsed} s")
print("'us' rows: time per operation, lower is better; GB/s, Mmsg/s, Mops/s: higher is better. "
      "ours/OMPI < 1 is better for us rows, > 1 for the others. ± = (max-min)/median over the pairs. "
      "better: ~ when within 10%. calibration: memcpy of the row's size; RT = cache-line round trip "
      "between 2 processes, pinned/unpinned.")
print(f"1-minute load average before the runs: {load0} (other work on the 2 cores skews every figure)")
show(hdr)
show(["-" * x for x in w])
for l in table:
    show(l)
print()
if calm:
    mc = " ".join(f"{k[len('memcpy_bw_'):]}={fmt(v)}" for k, v in calm.items() if k.startswith("memcpy_bw_"))
    print(f"calibration (plain C, median of {len(glob.glob(work + '/out/calib.p*.txt'))} runs): memcpy GB/s {mc}")
    print(f"  cache-line round trip between two processes: unpinned {fmt(calm.get('rt_unpinned'))} us, pinned {fmt(calm.get('rt_pinned'))} us")
    print(f"  central-counter spinning barrier of two processes: unpinned {fmt(calm.get('barrier_spin_2_unpinned'))} us, pinned {fmt(calm.get('barrier_spin_2_pinned'))} us")
# Our 2-PE barrier against the spinning barrier of the same pair (both unpinned).
spin = {}
for path in glob.glob(f"{work}/out/calib.p*.txt"):
    p = int(re.search(r"calib\.p(\d+)\.txt$", path).group(1))
    for row, v, u in parse(path)[0]:
        if row == "barrier_spin_2_unpinned":
            spin[p] = v
ratios = []
for p in sorted(spin):
    base = f"{work}/out/ours.osh_barrier.np2.p{p}.txt"
    if os.path.exists(base):
        ours_b = [v for row, v, u in parse(base)[0] if row == "barrier_np2"]
        if ours_b and spin[p]:
            ratios.append(ours_b[0] / spin[p])
if ratios:
    r = statistics.median(ratios)
    print(f"  ours barrier_np2 / the spinning barrier, median of {len(ratios)} per-pair ratios: {r:.2f} "
          f"(target at most 1.5: {'met' if r <= 1.5 else 'missed'})")
for lib in libs:
    name = "ours" if lib == "ours" else "Open MPI"
    for i in infos[lib]:
        print(f"{name}: {i}")
notes = open(f"{work}/notes.txt").read().strip()
if notes:
    print(notes)
print("placement: Open MPI binds each PE to a core when PEs <= cores (2 PEs here) and binds none when "
      "oversubscribed; ours never binds. More than 2 PEs oversubscribe the 2 cores.")
for (lib, rc), which in late_exit.items():
    name = "ours" if lib == "ours" else "Open MPI"
    print(f"{name}: {len(which)} run(s) exited with status {rc} after printing DONE, i.e. in or after "
          f"shmem_finalize (results kept): {', '.join(sorted(set(which)))}")
# The C ABI against the Rust API: the per-pair ratio of one call's time, and its median.
pairs_c = sorted(glob.glob(f"{work}/out/calls.c.p*.txt"))
if pairs_c:
    print()
    print("C ABI against the Rust API, one PE, one call (ns); ratio = C / Rust per interleaved pair, target <= 1.10")
    rows = [("put 8 B", "c_put_8", "rust_put"), ("fetch_add", "c_fetch_add", "rust_fetch_add")]
    per = {r[0]: ([], [], []) for r in rows}
    for path in pairs_c:
        c = {k: v for k, v, _ in parse(path)[0]}
        rpath = path.replace("calls.c.", "calls.rust.")
        rust = {k: v for k, v, _ in parse(rpath)[0]} if os.path.exists(rpath) else {}
        for label, ck, rk in rows:
            if ck in c and rk in rust and rust[rk] > 0:
                per[label][0].append(c[ck]); per[label][1].append(rust[rk]); per[label][2].append(c[ck] / rust[rk])
    print(f"{'call':<10}  {'C ABI':>8}  {'Rust API':>8}  {'C/Rust':>6}  {'pairs':>5}  met")
    for label, _, _ in rows:
        cs, rs, ratios = per[label]
        if not ratios:
            print(f"{label:<10}  {'-':>8}  {'-':>8}  {'-':>6}  {0:>5}  -")
            continue
        m = statistics.median(ratios)
        print(f"{label:<10}  {fmt(statistics.median(cs)):>8}  {fmt(statistics.median(rs)):>8}  {m:>6.2f}  {len(ratios):>5}  {'yes' if m <= 1.10 else 'NO'}")
if problems:
    print("problems:")
    for p in problems:
        print("  " + p)
else:
    print("problems: none (every CHECK ok, every run printed DONE)")
PY
status=$?
[ "$keep" = 1 ] && echo "raw outputs kept in $WORK" >&2
exit $status
