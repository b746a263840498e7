#!/usr/bin/env bash
# README's set-up on Debian 12 (bookworm) with Debian's own python3 as shipped (externally
# managed, PEP 668), nothing else: no pyenv, no Python package from outside Debian but what pip
# puts in the virtual environments. In a debootstrap root filesystem holding exactly
# tests/debian-python-packages.txt (cached under /var/tmp by that list's hash), with this
# checkout copied to /src/malleo:
#   1. README.md's first command, read from README.md and run as written (a venv, pip install .,
#      malleo replay); its metrics table must be printed and `.venv/bin/malleo --version` run;
#   2. `make test-python` (make test's Python part: the venv of tests/python-env.sh, the debug
#      build, pytest -m "not slurm and not mpi") on MALLEO_DEBIAN_PYTHON_TESTS (default: a
#      representative fast subset; "tests" for all of it).
#
#   debian-python.sh [run]   build (or reuse) the root filesystem, run both steps
#   debian-python.sh build   only build (or reuse) the root filesystem
#   debian-python.sh shell   a shell inside it, checkout copied
#   debian-python.sh clean   delete the cache directory
#
# Environment:
#   MALLEO_DEBIAN_PYTHON_CACHE   cache directory (default /var/tmp/malleo-debian-python)
#   MALLEO_DEBIAN_PYTHON_MIRROR  Debian mirror (default: this machine's apt archive)
#   MALLEO_DEBIAN_PYTHON_TESTS   pytest paths for step 2 (default below)
#   MALLEO_SKIP_DEBIAN_PYTHON=1  skip (exit 0, saying so); for developers, never under CI
# Needs root (debootstrap, mount, chroot); without root it skips, except under CI (fails).
# Exit status: 0 both steps passed, 1 a step failed, 2 bad usage.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
suite=bookworm
cache="${MALLEO_DEBIAN_PYTHON_CACHE:-/var/tmp/malleo-debian-python}"
tests="${MALLEO_DEBIAN_PYTHON_TESTS:-tests/test_package.py tests/test_cli_replay.py tests/test_policy_file.py tests/test_core_plan.py tests/test_plots.py}"
t_start=$(date +%s)

say() { echo "debian-python.sh: $*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=../slurm-docker/chroot-lib.sh
. "$repo/slurm-docker/chroot-lib.sh"

cmd="${1:-run}"
case "$cmd" in
    run|build|shell|clean) ;;
    *) sed -n '14,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
if [ "${MALLEO_SKIP_DEBIAN_PYTHON:-0}" = 1 ]; then
    [ "${CI:-}" = true ] && die "MALLEO_SKIP_DEBIAN_PYTHON=1 under CI: CI must check Debian's python3"
    say "MALLEO_SKIP_DEBIAN_PYTHON=1: skipping the Debian 12 python3 check"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    [ "${CI:-}" = true ] && die "needs root (debootstrap, mount, chroot), and CI must run it"
    say "not root: skipping the Debian 12 python3 check (needs debootstrap, mount, chroot)"
    exit 0
fi
if [ "$cmd" = clean ]; then rm -rf "$cache"; say "removed $cache"; exit 0; fi

mirror="${MALLEO_DEBIAN_PYTHON_MIRROR:-}"
[ -n "$mirror" ] || mirror=$(default_mirror) \
    || die "no Debian archive found in /etc/apt/sources.list*: set MALLEO_DEBIAN_PYTHON_MIRROR"
mapfile -t packages < <(sed -e 's/#.*//' "$here/debian-python-packages.txt" | tr -s ' \t' '\n' | sed '/^$/d')
recipe=1   # bump when the root filesystem's recipe (chroot-lib.sh's debootstrap_root) changes
key=$(printf '%s\n%s\nrecipe %s\n' "$suite" "${packages[*]}" "$recipe" | sha256sum | cut -c1-16)
root="$cache/rootfs-$key"
log="$cache/build-$key.log"

mkdir -p "$cache"
exec 9>"$root.lock"
if ! flock -n 9; then
    say "another run holds $root.lock: waiting for it (at most 30 min)"
    flock -w 1800 9 || die "gave up waiting for $root.lock"
fi
trap unmount_all EXIT
trap 'exit 130' INT TERM

if [ -f "$root/.malleo-rootfs-complete" ]; then
    say "reusing $root (debian-python-packages.txt unchanged)"
else
    rm -rf "$root.partial"
    : >"$log"
    debootstrap_root "$root.partial" "${packages[@]}"
    touch "$root.partial/.malleo-rootfs-complete"
    rm -rf "$root"
    mv "$root.partial" "$root"
    find "$cache" -mindepth 1 -maxdepth 1 -name 'rootfs-*' ! -name "rootfs-$key" -exec rm -rf {} +
    say "root filesystem built in $(( $(date +%s) - t_start )) s"
fi
[ "$cmd" = build ] && exit 0

copy_checkout "$repo" "$root"
mount_system "$root"
if [ "$cmd" = shell ]; then
    in_root "$root" /bin/bash -c "cd /src/malleo && exec bash -i" || true
    exit 0
fi

# Step 1: the first command of README.md's first ```sh block, exactly as written.
readme_cmd=$(awk '/^```sh$/ { inside = 1; next } inside { print; exit }' "$repo/README.md")
[ -n "$readme_cmd" ] || die "no \`\`\`sh block in README.md"
python_version=$(in_root "$root" python3 --version)
in_root "$root" python3 -c 'import sys; assert sys.prefix == "/usr", sys.prefix'
[ -e "$root/usr/lib/python3.11/EXTERNALLY-MANAGED" ] \
    || die "$suite's python3 is not marked externally managed: not the Python this check is for"
say "step 1 ($python_version, externally managed): $readme_cmd"
t0=$(date +%s)
out="$cache/readme-$key.out"
in_root "$root" /bin/sh -c "cd /src/malleo && $readme_cmd" >"$out" 2>&1 \
    || die "README's first command failed on Debian 12's python3: $(tail -n 15 "$out")"
grep -q '^jobs replayed  *10,000$' "$out" && grep -q '^bounded slowdown mean' "$out" \
    || die "README's first command printed no metrics table: $(tail -n 15 "$out")"
version=$(in_root "$root" /bin/sh -c 'cd / && /src/malleo/.venv/bin/malleo --version') \
    || die "malleo --version failed in the README's venv"
say "step 1 passed in $(( $(date +%s) - t0 )) s: $version"

# Step 2: make test's Python part, with the venv make makes (here: the README's .venv, reused).
t0=$(date +%s)
set +e
in_root "$root" /bin/sh -c "cd /src/malleo && make test-python PYTEST_ARGS='-q -p no:cacheprovider $tests'"
rc=$?
set -e
[ "$rc" -eq 0 ] || die "make test-python failed on Debian 12's python3 (exit $rc)"
say "step 2 passed in $(( $(date +%s) - t0 )) s; whole run $(( $(date +%s) - t_start )) s"
