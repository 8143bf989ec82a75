#!/usr/bin/env bash
# Mutation check of the conformance suite: applies each deliberate bug in this folder (*.patch)
# to a clean copy of HEAD, runs the suite there, and requires it to FAIL. Prints one line per
# mutation and exits non-zero if the suite passed with any of them (a suite that cannot catch
# the bug).
#
#   bash conformance/mutations/run.sh            # every patch
#   bash conformance/mutations/run.sh NAME.patch # one
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel)"
work="$(mktemp -d)"
trap 'git -C "$repo" worktree remove --force "$work/tree" >/dev/null 2>&1; rm -rf "$work"' EXIT
git -C "$repo" worktree add --detach "$work/tree" HEAD >/dev/null
export CARGO_TARGET_DIR="$work/target" SHMEM_CONFORMANCE_FULL="${SHMEM_CONFORMANCE_FULL:-0}"
patches=("$@")
[ ${#patches[@]} -eq 0 ] && patches=("$here"/*.patch)
caught=0 missed=0
for p in "${patches[@]}"; do
    p="$here/$(basename "$p")"
    git -C "$work/tree" checkout -q -- .
    if ! git -C "$work/tree" apply "$p"; then
        echo "mutation $(basename "$p"): does not apply to HEAD"; missed=$((missed + 1)); continue
    fi
    log="$work/$(basename "$p" .patch).log"
    if (cd "$work/tree" && cargo test -q -p shmem-conformance --test sim) >"$log" 2>&1; then
        echo "mutation $(basename "$p"): MISSED (the suite passed)"; missed=$((missed + 1))
    else
        failed=$(grep -c '\.\.\. FAILED' "$log")
        echo "mutation $(basename "$p"): caught ($failed trials failed, e.g. $(grep -m1 '\.\.\. FAILED' "$log" | sed 's/^test \[sim\] //; s/ *\.\.\. FAILED//'))"
        caught=$((caught + 1))
    fi
done
echo "$caught caught, $missed missed"
[ "$missed" -eq 0 ]
