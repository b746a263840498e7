#!/usr/bin/env bash
# Run the whole pytest suite. The session-scoped fixture in tests/conftest.py brings up
# the real local Slurm (slurm-docker/local-slurm.sh) for slurm-marked tests and tears it
# down. Pytest's exit 5 (no tests collected) is a failure here, like any non-zero exit.
set -uo pipefail
cd "$(dirname "$0")/.."
# As root (CI's `make test`) the slurm tests must run: the fixture fails instead of skipping.
if [ "$(id -u)" -eq 0 ]; then export MALLEO_REQUIRE_SLURM="${MALLEO_REQUIRE_SLURM:-1}"; fi
# make test passes PYTHON (its virtual environment's interpreter); python3 otherwise.
"${PYTHON:-python3}" -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    echo "run-suite: pytest collected no tests: failing" >&2
    exit 1
fi
exit "$rc"
