#!/usr/bin/env bash
# Two lanes side by side: make test's way of fitting CI's time (docs/testing.md, "make test's
# time"). The background lane is CPU-bound work with no live service (the unit tests, Debian
# 12's python3); the foreground lane is the Slurm versions' suites one after another, which
# mostly wait on Slurm (jobs sleeping, scheduler passes, the twin's 5-minute workload). On 2
# cores the CPU work fills the waiting instead of adding to the wall time, and the machine's
# load stays modest (one busy process beside the live tests; the live tests flake above ~10).
#
#   lanes.sh NAME 'BACKGROUND COMMAND' FOREGROUND COMMAND...
#
# BACKGROUND COMMAND is one string run by bash -c, its output kept in a temporary file and
# printed after the foreground lane's, under a header; FOREGROUND COMMAND runs with the
# terminal. Both always run to the end (a failure in one does not stop the other); a TERM or
# Ctrl-C to the process group stops both and prints what the background lane wrote so far.
# Exit status: 0 when both exit 0; otherwise the foreground's non-zero status, or 1.
set -uo pipefail
[ $# -ge 3 ] || { sed -n '9,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
name="$1" background="$2"
shift 2
say() { echo "lanes: $*" >&2; }
elapsed() { local s=$(( $(date +%s) - $1 )); printf '%d min %02d s' $(( s / 60 )) $(( s % 60 )); }

log=$(mktemp "${TMPDIR:-/tmp}/malleo-lane-$name.XXXXXX")
t0=$(date +%s)
# A process group of its own (setsid), so that Ctrl-C or a CI timeout stops the whole lane.
# A SIGKILL of this script cannot be trapped, and the group's own session is out of reach of a
# kill of the caller's group: a watcher in the group stops it, and removes the log, when
# this script is gone.
watch="(while kill -0 $$ 2>/dev/null; do sleep 2; done; rm -f '$log'; kill -TERM 0) & watcher=\$!"
setsid -w bash -c "$watch; $background
rc=\$?; kill \$watcher 2>/dev/null; exit \$rc" >"$log" 2>&1 </dev/null &
pid=$!
# Ctrl-C or a CI time-out signals the caller's whole process group: the foreground lane
# stops, then this trap stops the background lane's session.
stopped() {
    kill -TERM -- "-$pid" 2>/dev/null
    echo "=================== lanes: output of the $name lane so far (stopped) ==================="
    cat "$log"
    rm -f "$log"
    exit 130
}
trap stopped INT TERM
say "$name lane started in the background (pid $pid, output at the end: $log)"
"$@"
rc=$?
say "foreground lane: exit $rc in $(elapsed "$t0")"
wait "$pid"
rc_bg=$?
trap - INT TERM
echo "=================== lanes: output of the $name lane ($background) ==================="
cat "$log"
rm -f "$log"
say "$name lane: exit $rc_bg; both lanes done in $(elapsed "$t0")"
[ "$rc" -ne 0 ] && exit "$rc"
[ "$rc_bg" -ne 0 ] && exit 1
exit 0
