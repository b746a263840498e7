#!/usr/bin/env bash
# Run the whole pytest suite. The session-scoped fixture in tests/conftest.py brings up
# the real local Slurm (slurm-docker/local-slurm.sh) for slurm-marked tests and tears it
# down. Pytest's exit 5 (no tests collected) is a failure here, like any non-zero exit.
#
# MALLEO_TWIN_BESIDE=1 (make test sets it): the twin's measurement (tests/test_twin.py's two
# tests on a private cluster of their own, a 300-job workload running about 5 minutes in real
# time with the machine mostly idle) runs in a second pytest beside the suite, deselected
# from it; its output follows the suite's. Both must pass. Not when the arguments name test
# paths: then those alone run, in one pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
# As root (CI's `make test`) the slurm tests must run: the fixture fails instead of skipping.
if [ "$(id -u)" -eq 0 ]; then export MALLEO_REQUIRE_SLURM="${MALLEO_REQUIRE_SLURM:-1}"; fi
python="${PYTHON:-python3}"     # make test passes its virtual environment's interpreter
twin_tests=(tests/test_twin.py::test_live_import_round_trips
            tests/test_twin.py::test_emulator_starts_slurm_s_jobs_in_the_same_order)
twin_pid=""
deselect=()
# Arguments naming test files or directories (`make test-host-integration PYTEST_ARGS=
# tests/test_agent.py`) choose the tests themselves: one pytest runs them, the twin's among
# them if named, instead of a second pytest running the same files again beside.
beside="${MALLEO_TWIN_BESIDE:-0}"
for arg in "$@"; do
    case "$arg" in -*) continue ;; esac
    if [ -e "${arg%%::*}" ]; then beside=0; break; fi
done
if [ "$beside" = 1 ]; then
    twin_log=$(mktemp /tmp/malleo-twin-beside.XXXXXX)
    "$python" -m pytest -p no:cacheprovider "${twin_tests[@]}" "$@" >"$twin_log" 2>&1 &
    twin_pid=$!
    t_twin=$(date +%s)
    for node in "${twin_tests[@]}"; do deselect+=("--deselect=$node"); done
    echo "run-suite: the twin's tests run beside the suite (pid $twin_pid, output at the end)" >&2
fi
"$python" -m pytest "${deselect[@]}" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    echo "run-suite: pytest collected no tests: failing" >&2
    rc=1
fi
if [ -n "$twin_pid" ]; then
    wait "$twin_pid"
    rc_twin=$?
    cat "$twin_log"
    rm -f "$twin_log"
    [ "$rc_twin" -eq 5 ] && rc_twin=0        # the arguments selected none of them
    echo "run-suite: the twin's tests beside: exit $rc_twin in $(( $(date +%s) - t_twin )) s" >&2
    [ "$rc" -eq 0 ] && rc=$rc_twin
fi
exit "$rc"
