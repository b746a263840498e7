#!/usr/bin/env bash
# make test's live lane: every Slurm version's suite, one after another, then the container
# cluster (docs/testing.md, "make test's time"). Each part runs even when one before it
# failed, so that one run shows every version's result (a flaky test on one version used to
# hide the others' results until the next run); the exit status is 0 only when all passed.
#
#   live-lane.sh MAKE-TARGET...     (make test-live-lane passes the parts in order)
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: live-lane.sh MAKE-TARGET..." >&2; exit 2; }
make_cmd=${MAKE:-make}
failed=() summary=()
for target in "$@"; do
    t0=$(date +%s)
    $make_cmd --no-print-directory "$target"
    rc=$?
    s=$(( $(date +%s) - t0 ))
    summary+=("$(printf '%-24s exit %d in %d min %02d s' "$target" "$rc" $(( s / 60 )) $(( s % 60 )))")
    [ "$rc" -eq 0 ] || failed+=("$target")
done
echo "live-lane: summary" >&2
printf '  %s\n' "${summary[@]}" >&2
if [ "${#failed[@]}" -gt 0 ]; then
    echo "live-lane: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "live-lane: every part passed" >&2
