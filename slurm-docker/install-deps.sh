#!/usr/bin/env bash
# Install the Debian packages malleo's Slurm and MPI tests need, only those missing:
#   munge slurmctld slurmd slurm-client   (a real Slurm on localhost: slurm-docker/local-slurm.sh)
#   libslurm-dev                          (slurm.h and libslurm.so: the libslurm backend's read)
#   openmpi-bin libopenmpi-dev            (real MPI; install before starting slurmd: PMIx)
#   python3-venv python3-dev gcc libc6-dev make (make test's virtual environment and the Cython
#                                         build with Debian's own python3: tests/python-env.sh)
#   --accounting adds: slurmdbd mariadb-server   (local-slurm.sh up --accounting)
#   --python: only the Python build packages and libopenmpi-dev (mpi4py's build), no Slurm
#             (make test-python; tests/debian-python.sh)
# As root: apt-get install --no-install-recommends, running apt-get update first only when a
# package is not known to apt yet. Not root: print what is missing and the command to run,
# exit 0 (the tests that need them skip, unless MALLEO_REQUIRE_SLURM=1).
# Idempotent and fast when everything is present (one dpkg-query). Never installs
# slurm-wlm-emulator (it replaces slurmctld/slurmd and cannot run).
set -euo pipefail

python_packages=(python3-venv python3-dev gcc libc6-dev make)
packages=(munge slurmctld slurmd slurm-client libslurm-dev openmpi-bin libopenmpi-dev "${python_packages[@]}")
case "${1:-}" in
    "") ;;
    --accounting) packages+=(slurmdbd mariadb-server) ;;
    --python) packages=("${python_packages[@]}" libopenmpi-dev) ;;
    *) echo "usage: install-deps.sh [--accounting|--python]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
    [ "${status:0:2}" = "ii" ] || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all present (${packages[*]})"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing ${missing[*]}; not root, not installing." >&2
    echo "install-deps: to install: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 0
fi

command -v apt-get >/dev/null || { echo "install-deps: apt-get not found (Debian/Ubuntu only)" >&2; exit 1; }

# Another apt/dpkg (e.g. unattended upgrades) may hold the lock: wait for it, up to 10 minutes.
apt_opts=(-o DPkg::Lock::Timeout=600 -y -q --no-install-recommends)

need_update=0
for pkg in "${missing[@]}"; do
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then need_update=1; break; fi
done
if [ "$need_update" = 1 ]; then
    echo "install-deps: apt-get update (package lists lack ${missing[*]})"
    apt-get -o DPkg::Lock::Timeout=600 update -q
fi
echo "install-deps: installing ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}"
