#!/usr/bin/env bash
# Create (or reuse) the virtual environment `make test` runs in, with Debian's python3 (PEP 668:
# externally managed, so nothing is installed into it) or any other Python >= 3.11.
#
#   python-env.sh VENV
#
# VENV gets malleo's build requirements (pyproject.toml [build-system]), its dependencies and
# its test extra, installed with pip; VENV/.malleo-requirements holds the hash of that list and
# of the base interpreter, and a second run with the same hash does nothing (a changed
# pyproject.toml or another python3 reinstalls). malleo itself is installed by `make build`
# or `make build-debug` (pip install -e . with this venv's build tools).
#
# Environment: MALLEO_BASE_PYTHON  the interpreter the venv is made from (default python3).
# Exit status: 0 ready, 1 a step failed (the message says which and what to install).
set -euo pipefail

say() { echo "python-env: $*" >&2; }
die() { say "$*"; exit 1; }

[ $# -eq 1 ] || { sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2; }
venv="$1"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
base="${MALLEO_BASE_PYTHON:-python3}"

command -v "$base" >/dev/null || die "$base not found (apt-get install python3)"
requirements=$("$base" - "$repo/pyproject.toml" <<'PY'
import sys
try:
    import tomllib
except ImportError:
    sys.exit(f"malleo needs Python >= 3.11 (tomllib); {sys.executable} is {sys.version.split()[0]}")
with open(sys.argv[1], "rb") as f:
    meta = tomllib.load(f)
project = meta["project"]
print("\n".join(meta["build-system"]["requires"] + ["wheel"] + project["dependencies"]
                + project["optional-dependencies"]["test"]))
PY
) || die "could not read malleo's requirements from $repo/pyproject.toml"
key=$( { printf '%s\n' "$requirements"; "$base" -c 'import sys; print(sys.version, sys.base_prefix)'; } \
       | sha256sum | cut -c1-16)

if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.malleo-requirements" 2>/dev/null)" = "$key" ]; then
    say "reusing $venv (requirements $key)"
else
    t0=$(date +%s)
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$venv"
        if ! "$base" -m venv "$venv"; then
            rm -rf "$venv"
            die "'$base -m venv' failed: on Debian, as root: apt-get install python3-venv (make test installs it when run as root)"
        fi
    fi
    say "installing malleo's build, run and test requirements into $venv"
    printf '%s\n' "$requirements" >"$venv/requirements.txt"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$venv/requirements.txt" \
        || die "pip install -r $venv/requirements.txt failed (mpi4py needs libopenmpi-dev; make test installs it as root)"
    echo "$key" >"$venv/.malleo-requirements"
    say "$venv ready in $(( $(date +%s) - t0 )) s"
fi
