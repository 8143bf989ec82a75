#!/usr/bin/env bash
# Runs the test suite of shmem4py 1.0.0 (PyPI: the sdist ships test/) against this
# repository's libshmem.so, on 1 and 2 PEs, and proves that the module uses it.
#
#   conformance/python/run_shmem4py.sh [PROFILE_DIR [WORK_DIR]]
#
# PROFILE_DIR (default target/release, relative to the repository root) holds libshmem.so,
# oshcc and oshrun, already built (this script runs no cargo). WORK_DIR receives the venv,
# the sdist and the logs (default: a temporary directory, removed at the end unless
# KEEP_WORKDIR=1). Needs network access to PyPI, python3 with venv and its C headers, a C
# compiler (cc) and nm.
#
# Environment:
#   PYTHON            interpreter that makes the venv (default python3)
#   SHMEM4PY_NPES     PE counts to run (default "1 2", as shmem4py's own CI)
#   SHMEM4PY_TIMEOUT  seconds for each oshrun job (default 900)
#   SHMEM4PY_SDIST    a local shmem4py-1.0.0.tar.gz instead of `pip download`
#   SHMEM4PY_OSHCC    the compiler wrapper (default PROFILE_DIR/oshcc; absolute path)
#   SHMEM4PY_CFLAGS   extra compiler flags for the extension
#
# Vendor detection: shmem4py's src/libshmem.c recognises Open MPI, OSHMPI, Cray, OSSS and
# SOS by their headers' macros; for any other vendor src/libshmem/fallback.h defines static
# stand-ins (shmem_malloc_with_hints, the team API, put_signal, the AMO _nbi forms, the team
# collectives and reductions, the wait/test _all/_any/_some forms, shmem_pcontrol), which
# clash with the extern declarations of our shmem.h ("static declaration follows
# non-static declaration"). Unless shmem.h itself defines every PySHMEM_HAVE_* feature
# macro, the extension is built with CFLAGS=-DPySHMEM_VENDOR_Sandia=1: setuptools appends
# $CFLAGS to the compile and link commands, shmem4py's build replaces only the compiler's
# name with $OSHCC, and libshmem.c then takes config/sandia.h (all 20 PySHMEM_HAVE_*
# macros) and the empty compat/sandia.h, so fallback.h defines nothing of the API and every
# routine is imported from libshmem.so. No shmem4py source is changed.
#
# Exit status: 0 only if, for every PE count, every PE ran the suite with no failure, no
# error and no skip (every skip in shmem4py 1.0.0's tests is a vendor or missing-feature
# skip: 'open-mpi', 'OSHMPI', 'osss-ucx', 'put-with-signal', 'team'), and the checks hold:
# every PySHMEM_HAVE_* feature on, all 1,510 OpenSHMEM 1.5 symbols
# (core/capi/lib/tests/openshmem-1.5-symbols.txt) imported by shmem4py/api.abi3.so and bound at run time to
# PROFILE_DIR/libshmem.so, and shmem4py reporting our SHMEM_VENDOR_STRING.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SYMBOLS=$ROOT/core/capi/lib/tests/openshmem-1.5-symbols.txt
VERSION=1.0.0

die() { echo "run_shmem4py: error: $*" >&2; exit 2; }
FAILURES=()
fail() { echo "run_shmem4py: FAIL: $*" >&2; FAILURES+=("$*"); }
step() { echo; echo "== $*"; }

PROFILE=${1:-target/release}
case $PROFILE in /*) ;; *) PROFILE=$ROOT/$PROFILE ;; esac
[ -d "$PROFILE" ] || die "no profile directory $PROFILE (build it first: cargo build --release -p shmem-c)"
PROFILE=$(cd "$PROFILE" && pwd)
LIB=$PROFILE/libshmem.so
OSHRUN=$PROFILE/oshrun
OSHCC=${SHMEM4PY_OSHCC:-$PROFILE/oshcc}
case $OSHCC in /*) ;; *) die "SHMEM4PY_OSHCC must be an absolute path: $OSHCC" ;; esac
for f in "$LIB" "$OSHRUN" "$OSHCC"; do [ -e "$f" ] || die "missing $f"; done
[ -x "$OSHRUN" ] && [ -x "$OSHCC" ] || die "$OSHRUN or $OSHCC is not executable"
[ -f "$SYMBOLS" ] || die "missing $SYMBOLS"
PYTHON=${PYTHON:-python3}
NPES=${SHMEM4PY_NPES:-1 2}
TIMEOUT=${SHMEM4PY_TIMEOUT:-900}
for tool in "$PYTHON" nm tar awk; do command -v "$tool" >/dev/null || die "$tool not found"; done

if [ $# -ge 2 ]; then
    mkdir -p "$2" || die "cannot create $2"
    WORK=$(cd "$2" && pwd)
    rm -rf "$WORK/venv" "$WORK/dl" "$WORK/src" "$WORK/logs"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/shmem4py.XXXXXX") || die "mktemp failed"
    if [ "${KEEP_WORKDIR:-0}" = 1 ]; then
        echo "work directory: $WORK (kept)"
    else
        trap 'rm -rf "$WORK"' EXIT
    fi
fi
LOGS=$WORK/logs
mkdir -p "$LOGS" "$WORK/dl" "$WORK/src"
echo "repository: $ROOT"
echo "profile:    $PROFILE"
echo "oshcc:      $OSHCC"
echo "work:       $WORK"
if [ "$LIB" -ot "$ROOT/core/capi/include/shmem.h" ]; then
    echo "run_shmem4py: warning: $LIB is older than core/capi/include/shmem.h (not rebuilt since the header changed?)" >&2
fi

# --- venv ----------------------------------------------------------------------------
step "venv ($PYTHON) with cffi, numpy<2 (shmem4py 1.0.0 uses np.array(copy=False))"
"$PYTHON" -m venv "$WORK/venv" || die "python -m venv failed (Debian: apt-get install python3-venv)"
PY=$WORK/venv/bin/python
PIP=("$PY" -m pip --disable-pip-version-check --no-input)
"${PIP[@]}" install -q cffi 'numpy<2' setuptools wheel > "$LOGS/pip-deps.log" 2>&1 \
    || { cat "$LOGS/pip-deps.log"; die "pip install cffi numpy<2 failed"; }
"$PY" -c 'import cffi, numpy; print("cffi", cffi.__version__, "numpy", numpy.__version__)'

# --- sdist ---------------------------------------------------------------------------
step "shmem4py $VERSION sdist"
if [ -n "${SHMEM4PY_SDIST:-}" ]; then
    cp "$SHMEM4PY_SDIST" "$WORK/dl/" || die "cannot copy $SHMEM4PY_SDIST"
else
    "${PIP[@]}" download -q --no-binary :all: --no-deps --no-build-isolation \
        "shmem4py==$VERSION" -d "$WORK/dl" > "$LOGS/pip-download.log" 2>&1 \
        || { cat "$LOGS/pip-download.log"; die "pip download shmem4py==$VERSION failed"; }
fi
SDIST=$WORK/dl/shmem4py-$VERSION.tar.gz
[ -f "$SDIST" ] || die "no $SDIST after download"
tar -xzf "$SDIST" -C "$WORK/src" || die "cannot unpack $SDIST"
SRC=$WORK/src/shmem4py-$VERSION
[ -d "$SRC/test" ] && [ -f "$SRC/src/libshmem/fallback.h" ] || die "unexpected sdist layout in $SRC"
echo "$SDIST ($(ls "$SRC"/test/test_*.py | wc -l) test files)"

# --- vendor flags --------------------------------------------------------------------
step "vendor detection"
HAVES=$(grep -o 'PySHMEM_HAVE_[A-Za-z0-9_]*' "$SRC/src/libshmem/fallback.h" | sort -u)
printf '#include <shmem.h>\n' | "$OSHCC" -E -dM -x c - > "$LOGS/shmem_h.macros" 2>&1 \
    || { cat "$LOGS/shmem_h.macros"; die "$OSHCC cannot preprocess <shmem.h>"; }
missing_in_header=0
for h in $HAVES; do grep -q "^#define $h\b" "$LOGS/shmem_h.macros" || missing_in_header=$((missing_in_header + 1)); done
VENDOR_CFLAGS=
if [ "$missing_in_header" -eq 0 ]; then
    echo "shmem.h defines every PySHMEM_HAVE_* macro itself: no vendor flag"
else
    VENDOR_CFLAGS=-DPySHMEM_VENDOR_Sandia=1
    echo "shmem.h defines $((($(echo "$HAVES" | wc -w)) - missing_in_header)) of $(echo "$HAVES" | wc -w) PySHMEM_HAVE_* macros: CFLAGS=$VENDOR_CFLAGS (config/sandia.h)"
fi
BUILD_CFLAGS=$(echo "$VENDOR_CFLAGS ${SHMEM4PY_CFLAGS:-} ${CFLAGS:-}" | xargs)

# Every feature macro that fallback.h tests must be defined once shmem.h and libshmem.c's
# vendor selection are read with the build's flags, or a stand-in replaces the library.
# shellcheck disable=SC2086
printf '#include <shmem.h>\n#include <libshmem.c>\n' \
    | "$OSHCC" $BUILD_CFLAGS -I"$SRC/src" -E -dM -x c - > "$LOGS/libshmem_c.macros" 2>&1 \
    || { cat "$LOGS/libshmem_c.macros"; die "$OSHCC cannot preprocess shmem4py's libshmem.c"; }
off=
for h in $HAVES; do grep -q "^#define $h\b" "$LOGS/libshmem_c.macros" || off="$off $h"; done
n_haves=$(echo "$HAVES" | wc -w)
if [ -n "$off" ]; then
    fail "PySHMEM_HAVE_* features off:$off"
else
    vendor=$(grep -o 'PySHMEM_VENDOR_[A-Za-z]*' "$LOGS/libshmem_c.macros" | sort -u | xargs echo)
    echo "features: all $n_haves PySHMEM_HAVE_* macros on (${vendor:-no PySHMEM_VENDOR_*: from shmem.h})"
fi

# --- build ---------------------------------------------------------------------------
step "build and install shmem4py with OSHCC=$OSHCC CFLAGS='$BUILD_CFLAGS'"
(cd "$WORK" && OSHCC=$OSHCC CFLAGS=$BUILD_CFLAGS \
    "${PIP[@]}" install -v --no-build-isolation --no-deps --no-cache-dir "$SDIST") \
    > "$LOGS/build.log" 2>&1 \
    || { tail -60 "$LOGS/build.log"; die "building shmem4py failed (Debian: python3-dev and gcc needed)"; }
# The compile (shmem4py.api.c) and link (api.abi3.so) commands must all start with $OSHCC.
grep -E 'shmem4py\.api\.c -o |-o [^ ]*api\.abi3\.so' "$LOGS/build.log" | sed 's/^ *//' > "$LOGS/build-commands.txt"
sed 's/^/  /' "$LOGS/build-commands.txt"
[ "$(wc -l < "$LOGS/build-commands.txt")" -ge 2 ] \
    || fail "build.log shows no compile and link of shmem4py.api (pip -v output changed?)"
if grep -vqF "$OSHCC " "$LOGS/build-commands.txt"; then
    fail "shmem4py.api compiled or linked by another compiler than $OSHCC"
fi
grep -E ': warning: ' "$LOGS/build.log" | sed 's/^/  /' | head -20
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
SO=$SITE/shmem4py/api.abi3.so
[ -f "$SO" ] || die "no $SO after installation"
echo "installed $SO"

# --- symbols -------------------------------------------------------------------------
step "symbols imported by api.abi3.so"
grep -v '^#' "$SYMBOLS" | LC_ALL=C sort -u > "$LOGS/expected.txt"
n_expected=$(wc -l < "$LOGS/expected.txt")
nm -D --undefined-only "$SO" | awk '{print $NF}' | sed 's/@.*//' | LC_ALL=C sort -u > "$LOGS/undefined.txt"
LC_ALL=C comm -23 "$LOGS/expected.txt" "$LOGS/undefined.txt" > "$LOGS/not-imported.txt"
n_imported=$((n_expected - $(wc -l < "$LOGS/not-imported.txt")))
echo "$n_imported of $n_expected OpenSHMEM 1.5 symbols imported (nm -D --undefined-only)"
[ -s "$LOGS/not-imported.txt" ] && fail "not imported by api.abi3.so: $(head -20 "$LOGS/not-imported.txt" | xargs)"
# A stand-in from fallback.h would be a local definition of an API name in the module.
nm "$SO" 2>/dev/null | awk '$2 ~ /^[tTwWdDbB]$/ {print $3}' | LC_ALL=C sort -u \
    | LC_ALL=C comm -12 "$LOGS/expected.txt" - > "$LOGS/defined-locally.txt"
[ -s "$LOGS/defined-locally.txt" ] && fail "defined inside api.abi3.so (fallback stand-ins): $(head -20 "$LOGS/defined-locally.txt" | xargs)"

# --- bindings and vendor -------------------------------------------------------------
step "run-time bindings (LD_DEBUG=bindings) and vendor string"
PROBE='
import shmem4py
from shmem4py import shmem
print("FILE=" + shmem4py.__file__)
print("NAME=" + shmem.info_get_name())
print("VENDOR=" + shmem.VENDOR_STRING)
print("PES=%d/%d" % (shmem.my_pe(), shmem.n_pes()))
print("VERSION=%d.%d" % shmem.info_get_version())
'
mkdir -p "$LOGS/ld"
(cd "$WORK" && LD_DEBUG=bindings LD_DEBUG_OUTPUT=$LOGS/ld/bindings \
    "$OSHRUN" -n 1 --timeout 120 -- "$PY" -c "$PROBE") > "$LOGS/probe.out" 2> "$LOGS/probe.err" \
    || { cat "$LOGS/probe.out" "$LOGS/probe.err"; fail "import + shmem_init probe failed"; }
cat "$LOGS/probe.out"
# lines: "<pid>: binding file <from> [0] to <to> [0]: normal symbol `<name>' [<version>]"
cat "$LOGS"/ld/bindings.* 2>/dev/null \
    | sed -n "s|.*binding file \([^ ]*/shmem4py/api\.abi3\.so\) \[[0-9]*\] to \([^ ]*\) \[[0-9]*\]: normal symbol \`\([^']*\)'.*|\3 \2|p" \
    | LC_ALL=C sort -u > "$LOGS/bound.txt"
LIB_REAL=$(realpath "$LIB")
: > "$LOGS/bound-to.txt"
for to in $(awk '{print $2}' "$LOGS/bound.txt" | sort -u); do
    real=$(realpath "$to")
    awk -v t="$to" -v r="$real" '$2 == t {print $1, r}' "$LOGS/bound.txt" >> "$LOGS/bound-to.txt"
done
awk -v lib="$LIB_REAL" '$2 == lib {print $1}' "$LOGS/bound-to.txt" | LC_ALL=C sort -u > "$LOGS/bound-to-ours.txt"
LC_ALL=C comm -23 "$LOGS/expected.txt" "$LOGS/bound-to-ours.txt" > "$LOGS/not-bound.txt"
n_bound=$((n_expected - $(wc -l < "$LOGS/not-bound.txt")))
echo "$n_bound of $n_expected OpenSHMEM 1.5 symbols of api.abi3.so bound to $LIB_REAL"
if [ -s "$LOGS/not-bound.txt" ]; then
    others=$(awk -v lib="$LIB_REAL" '$2 != lib {print $2}' "$LOGS/bound-to.txt" | sort -u | xargs)
    fail "not bound to $LIB_REAL: $(head -10 "$LOGS/not-bound.txt" | xargs) (other targets: ${others:-none})"
fi
EXPECTED_VENDOR=$(sed -n 's/^#define SHMEM_VENDOR_STRING "\(.*\)"$/\1/p' "$LOGS/shmem_h.macros")
[ -n "$EXPECTED_VENDOR" ] || fail "shmem.h defines no SHMEM_VENDOR_STRING"
grep -qxF "NAME=$EXPECTED_VENDOR" "$LOGS/probe.out" \
    || fail "shmem.info_get_name() is not our vendor string '$EXPECTED_VENDOR'"
grep -qxF "VENDOR=$EXPECTED_VENDOR" "$LOGS/probe.out" \
    || fail "shmem.VENDOR_STRING is not our vendor string '$EXPECTED_VENDOR'"
grep -q "^FILE=$SITE/" "$LOGS/probe.out" || fail "shmem4py was not imported from the venv ($SITE)"
H_VERSION=$(sed -n 's/^#define SHMEM_MAJOR_VERSION \([0-9]*\)$/\1/p' "$LOGS/shmem_h.macros").$(sed -n 's/^#define SHMEM_MINOR_VERSION \([0-9]*\)$/\1/p' "$LOGS/shmem_h.macros")
if ! grep -qxF "NAME=$EXPECTED_VENDOR" "$LOGS/probe.out" || ! grep -qxF "VERSION=$H_VERSION" "$LOGS/probe.out"; then
    echo "run_shmem4py: note: libshmem.so answers $(grep -E '^(NAME|VERSION)=' "$LOGS/probe.out" | xargs), shmem.h says" \
        "'$EXPECTED_VENDOR' $H_VERSION: is $LIB older than the header (rebuild: cargo build --release -p shmem-c)?" >&2
fi
echo "vendor: '$EXPECTED_VENDOR'"

# --- the suite -----------------------------------------------------------------------
TOTAL_PASSED=0
TOTAL_FAILED=0
SUMMARY=()
for n in $NPES; do
    step "python -m unittest discover -s test -v on $n PE(s)"
    rm -f "$LOGS/unittest.np$n".pe*.log
    # One log per PE (oshrun gives each PE SHMEMRUN_PE), run from the unpacked sdist as
    # shmem4py's CI does; `import shmem4py` finds the installed module (the sdist keeps
    # it under src/).
    (cd "$SRC" && "$OSHRUN" -n "$n" --timeout "$TIMEOUT" -- /bin/sh -c \
        'exec "$1" -m unittest discover -s test -v > "$2.pe$SHMEMRUN_PE.log" 2>&1' \
        sh "$PY" "$LOGS/unittest.np$n")
    rc=$?
    cat "$LOGS/unittest.np$n.pe0.log" 2>/dev/null
    run_failed=0
    [ "$rc" -eq 0 ] || { fail "oshrun -n $n exited with status $rc"; run_failed=1; }
    bad_tests=()
    ran0=0
    for ((pe = 0; pe < n; pe++)); do
        log=$LOGS/unittest.np$n.pe$pe.log
        if [ ! -f "$log" ]; then
            fail "$n PEs: PE $pe wrote no log"; run_failed=1; SUMMARY+=("shmem4py $VERSION, $n PE(s), PE $pe: no output"); continue
        fi
        ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$log" | tail -1)
        ran_line=$(grep -E '^Ran [0-9]+ tests? in ' "$log" | tail -1)
        status=$(grep -E '^(OK|FAILED)( \(.*\))?$' "$log" | tail -1)
        [ "$pe" -eq 0 ] && ran0=${ran:-0}
        SUMMARY+=("shmem4py $VERSION, $n PE(s), PE $pe: ${ran_line:-no 'Ran' line} ... ${status:-no result line}")
        if [ -z "$ran" ] || [ "$status" != OK ]; then
            fail "$n PEs, PE $pe: ${ran_line:-no 'Ran' line}, ${status:-no result line}"
            run_failed=1
        fi
        while IFS= read -r t; do bad_tests+=("$t"); done < <(
            sed -n -e 's/^\(FAIL\|ERROR\): \([^ ]*\) (\(.*\))$/\3 \1/p' \
                   -e "s/^\([^ ]*\) (\(.*\)) \.\.\. skipped \(.*\)$/\2 SKIPPED \3/p" "$log")
        if grep -q '\.\.\. skipped ' "$log"; then
            fail "$n PEs, PE $pe: skipped tests (vendor or missing feature): $(grep -o '([^)]*) \.\.\. skipped .*' "$log" | xargs)"
            run_failed=1
        fi
        if [ "$run_failed" -ne 0 ] && [ "$pe" -gt 0 ]; then
            echo "--- PE $pe's failures:"; sed -n '/^=\{20,\}$/,$p' "$log" | head -80
        fi
    done
    if [ ${#bad_tests[@]} -gt 0 ]; then
        echo "--- failing, erroring or skipped on $n PE(s):"
        printf '%s\n' "${bad_tests[@]}" | sort -u | sed 's/^/  /'
    fi
    n_bad=$(printf '%s\n' "${bad_tests[@]+"${bad_tests[@]}"}" | awk 'NF {print $1}' | sort -u | wc -l)
    [ "$run_failed" -ne 0 ] && [ "$n_bad" -eq 0 ] && n_bad=1
    [ "$n_bad" -gt "$ran0" ] && ran0=$n_bad
    TOTAL_PASSED=$((TOTAL_PASSED + ran0 - n_bad))
    TOTAL_FAILED=$((TOTAL_FAILED + n_bad))
done

step "summary"
printf '%s\n' "${SUMMARY[@]}"
if [ $# -lt 2 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    echo "logs: $LOGS (removed at exit; KEEP_WORKDIR=1 or a WORK_DIR argument keeps them)"
else
    echo "logs: $LOGS"
fi
if [ ${#FAILURES[@]} -gt 0 ]; then
    echo "checks failed:"
    printf '  %s\n' "${FAILURES[@]}"
    [ "$TOTAL_FAILED" -eq 0 ] && TOTAL_FAILED=1
fi
echo "shmem4py: $TOTAL_PASSED passed, $TOTAL_FAILED failed"
[ ${#FAILURES[@]} -eq 0 ]
