#!/usr/bin/env bash
# Start the cached builds the further-version suites need, in the background, so that they
# overlap the host suite in `make test` instead of adding to it:
#   Slurm 25.11 (build-slurm.sh) then pyslurm against it (build-pyslurm.sh), and
#   the Debian forky root filesystem (MALLEO_CHROOT_SUITE=forky chroot.sh build).
#
#   prebuild-versions.sh [--python PYTHON]
#
# Returns at once; output goes to /var/tmp/malleo-prebuild.log. Nothing waits for these
# processes explicitly: each build holds its own lock (flock) until its result is cached, so
# `make test-slurm-25.11` / `make test-forky` started later block on that lock and then find the
# result cached (or, if a background build failed, build again in the foreground and report
# the failure there). Skipped (exit 0) without root, or when a skip variable is set.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
[ "${1:-}" = --python ] && python="${2:?--python needs a value}"
log=/var/tmp/malleo-prebuild.log
[ "$(id -u)" -eq 0 ] || { echo "prebuild-versions: not root: nothing started" >&2; exit 0; }
{
    # Niced: on a cold run these compile (about 20 min) beside make test's live Slurm tests,
    # which must keep their CPU (they flake when the machine's load is high).
    renice -n 10 -p "$BASHPID" >/dev/null
    echo "prebuild-versions: started $(date -u +%FT%TZ)"
    if [ "${MALLEO_SKIP_SLURM_2511:-0}" != 1 ]; then
        (
            t0=$(date +%s)
            prefix=$(bash "$here/build-slurm.sh" --deps --print-prefix) \
                && bash "$here/build-pyslurm.sh" --prefix "$prefix" --python "$python" >/dev/null
            echo "prebuild-versions: Slurm 25.11 + pyslurm exit $? after $(( $(date +%s) - t0 )) s"
        ) &
    fi
    if [ "${MALLEO_SKIP_FORKY:-0}" != 1 ]; then
        (
            t0=$(date +%s)
            MALLEO_CHROOT_SUITE=forky bash "$here/chroot.sh" build
            echo "prebuild-versions: forky root filesystem exit $? after $(( $(date +%s) - t0 )) s"
        ) &
    fi
    wait
} >>"$log" 2>&1 </dev/null &
disown
echo "prebuild-versions: building in the background (log $log)" >&2
