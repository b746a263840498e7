#!/usr/bin/env bash
# The slurm-docker image's content, proven without a Docker engine: a Debian 13 (trixie) root
# filesystem made by debootstrap, with exactly slurm-docker/packages.txt installed (the list the
# Dockerfile installs), malleo installed from this checkout into a venv, and the slurm- and
# mpi-marked tests run inside it with chroot: Slurm 24.11, brought up by the session fixture
# through slurm-docker/local-slurm.sh, as in the image.
#
#   chroot.sh [run] [PYTEST_ARGS...]   build (or reuse) the root filesystem, run
#                                      pytest -m "slurm or mpi" PYTEST_ARGS inside it
#   chroot.sh build                    only build (or reuse) the root filesystem, print its path
#   chroot.sh shell                    an interactive shell inside it (mounts as for run)
#   chroot.sh clean                    delete the cache directory
#
# Environment:
#   MALLEO_CHROOT_SUITE   trixie (default: Debian 13, Slurm 24.11) or forky (Debian testing,
#                         Slurm 26.05, Open MPI 6, Python 3.14; `make test-forky`). The same
#                         packages.txt is installed; forky has its own cache and skip variable.
#   MALLEO_FORKY_CACHE    forky's cache directory (default /var/tmp/malleo-forky)
#   MALLEO_SKIP_FORKY=1   skip the forky suite (developers only, never in CI)
#   MALLEO_TRIXIE_CACHE   cache directory (default /var/tmp/malleo-trixie); the root filesystem
#                         is kept there under a name keyed by the hash of packages.txt, the
#                         Python requirements (pyproject.toml) and the build recipe's number,
#                         so a second run reuses it
#   MALLEO_TRIXIE_MIRROR  Debian mirror (default: the first Debian archive URI this machine's
#                         apt uses, from /etc/apt/sources.list and sources.list.d)
#   MALLEO_SKIP_TRIXIE=1  skip (exit 0, saying so); for developers, never set in CI
#
# Needs root (debootstrap, mount, chroot). Without root it skips, saying so, except under CI
# (CI=true), where it fails: CI must test Slurm 24.11. /proc, /sys, /dev, /dev/pts and /dev/shm
# are mounted into the root filesystem for the run and unmounted on exit, whatever happens.
# Exit status: pytest's (0 all passed), 1 a set-up step failed, 2 bad usage.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
suite="${MALLEO_CHROOT_SUITE:-trixie}"
case "$suite" in
    trixie) label="Debian 13 / Slurm 24.11" skip_var=MALLEO_SKIP_TRIXIE
            cache="${MALLEO_TRIXIE_CACHE:-/var/tmp/malleo-trixie}"
            debootstrap_script="" ;;
    forky)  label="Debian forky / Slurm 26.05" skip_var=MALLEO_SKIP_FORKY
            cache="${MALLEO_FORKY_CACHE:-/var/tmp/malleo-forky}"
            # Debian 12's debootstrap has no forky script; forky is bootstrapped like sid.
            debootstrap_script=/usr/share/debootstrap/scripts/sid ;;
    *) echo "chroot.sh: MALLEO_CHROOT_SUITE=$suite: expected trixie or forky" >&2; exit 2 ;;
esac
venv=/opt/malleo-venv
t_start=$(date +%s)

say() { echo "chroot.sh: $*" >&2; }
die() { say "$*"; exit 1; }
elapsed() { local s=$(( $(date +%s) - $1 )); printf '%d min %02d s' $(( s / 60 )) $(( s % 60 )); }

cmd="${1:-run}"
case "$cmd" in
    run|build|shell|clean) [ $# -gt 0 ] && shift ;;
    -*) cmd=run ;;
    *) sed -n '8,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

if [ "${!skip_var:-0}" = 1 ]; then
    if [ "${CI:-}" = true ]; then
        die "$skip_var=1 under CI: CI must run the $label suite"
    fi
    say "$skip_var=1: skipping the $label suite"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    [ "${CI:-}" = true ] && die "needs root (debootstrap, mount, chroot), and CI must run it"
    say "not root: skipping the $label suite (needs debootstrap, mount, chroot)"
    exit 0
fi

if [ "$cmd" = clean ]; then
    rm -rf "$cache"
    say "removed $cache"
    exit 0
fi

# default_mirror, the mounts (mount_system, unmount_all: undone on exit) and copy_checkout.
# shellcheck source=chroot-lib.sh
. "$here/chroot-lib.sh"

mirror="${MALLEO_TRIXIE_MIRROR:-}"
if [ -z "$mirror" ]; then
    mirror=$(default_mirror) \
        || die "no Debian archive found in /etc/apt/sources.list*: set MALLEO_TRIXIE_MIRROR"
fi

# Packages: the non-comment words of packages.txt, one per line.
mapfile -t packages < <(sed -e 's/#.*//' "$here/packages.txt" | tr -s ' \t' '\n' | sed '/^$/d')
[ ${#packages[@]} -gt 0 ] || die "no packages in $here/packages.txt"

# The venv's requirements: malleo's dependencies and test extra (pyproject.toml), the build
# tools, and mpi4py (built against the chroot's Open MPI, as in the image).
requirements=$(python3 - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(["Cython>=3.0", "setuptools>=68", "wheel", "mpi4py"]
                + project["dependencies"] + project["optional-dependencies"]["test"]))
PY
) || die "could not read malleo's dependencies from pyproject.toml (needs Python >= 3.11)"

# The cache key: what goes into the root filesystem. Bump recipe when build_rootfs changes.
recipe=1
# trixie's key is unchanged from before forky existed (its cached roots stay valid).
suite_line=""
[ "$suite" = trixie ] || suite_line="suite $suite"
key=$(printf '%s\n%s\nrecipe %s\n%s' "$(cat "$here/packages.txt")" "$requirements" "$recipe" \
      "$suite_line" | sha256sum | cut -c1-16)
root="$cache/rootfs-$key"
done_marker="$root/.malleo-rootfs-complete"

# One run at a time per root filesystem: a second run's mounts and its exit clean-up (which
# stops every process inside the root) would break the first run.  Wait for it instead.
mkdir -p "$cache"
exec 9>"$root.lock"
if ! flock -n 9; then
    say "another chroot.sh run holds $root.lock: waiting for it (at most 30 min)"
    flock -w 1800 9 || die "gave up waiting for $root.lock"
fi

# --- mounts (always undone on exit) --------------------------------------------------------

trap unmount_all EXIT
trap 'exit 130' INT TERM

# in_root ROOT COMMAND...: run with a clean environment inside ROOT. Every virtual node of the
# test cluster is this one host, so Open MPI's TCP transport stays on loopback: Open MPI 5
# (Debian 13) otherwise fails with "Unable to find reachable pairing between local and remote
# interfaces" here (4.1 on Debian 12 does not need it).
in_root() {
    local r="$1"; shift
    env -i PATH="$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive TERM="${TERM:-dumb}" \
        ${CI:+CI="$CI"} MALLEO_REQUIRE_SLURM=1 PIP_CERT=/etc/ssl/certs/malleo-host-ca.crt \
        OMPI_MCA_btl_tcp_if_include=lo \
        chroot "$r" "$@"
}

# --- the root filesystem (cached) ----------------------------------------------------------

build_rootfs() {
    if [ -f "$done_marker" ]; then
        say "reusing $root (packages.txt unchanged)"
        return 0
    fi
    command -v debootstrap >/dev/null || {
        say "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
            --no-install-recommends debootstrap >/dev/null \
            || { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null \
                 && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
                    --no-install-recommends debootstrap >/dev/null; } \
            || die "could not install debootstrap"
    }
    local tmp="$root.partial" t0 log="$cache/build-$key.log"
    mkdir -p "$cache"
    rm -rf "$tmp"
    : >"$log"
    t0=$(date +%s)
    say "debootstrap --variant=minbase $suite from $mirror (log: $log)"
    debootstrap --variant=minbase "$suite" "$tmp" "$mirror" ${debootstrap_script:+"$debootstrap_script"} >>"$log" 2>&1 \
        || die "debootstrap failed (mirror $mirror unreachable?): $(tail -n 5 "$log")"
    say "debootstrap done in $(elapsed "$t0")"

    # As in the debian:trixie-slim image: package scripts do not start services.
    printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
    chmod 0755 "$tmp/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$tmp/etc/resolv.conf"
    cp /etc/hosts "$tmp/etc/hosts"
    # pip inside trusts what this machine's pip trusts (a site may intercept TLS to PyPI).
    mkdir -p "$tmp/etc/ssl/certs"
    cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$tmp/etc/ssl/certs/malleo-host-ca.crt"
    echo "deb $mirror $suite main" >"$tmp/etc/apt/sources.list"
    if [ "$suite" = forky ]; then
        # The reachable mirror serves a frozen testing (Release dated 2026-10-30, valid for a
        # week): apt refuses it as expired unless told not to check Valid-Until.
        echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99malleo-frozen-mirror"
    fi

    mount_system "$tmp"
    t0=$(date +%s)
    say "apt-get install ${packages[*]}"
    in_root "$tmp" apt-get update -q >>"$log" 2>&1 || die "apt-get update failed: $(tail -n 5 "$log")"
    in_root "$tmp" apt-get install -y -q --no-install-recommends "${packages[@]}" >>"$log" 2>&1 \
        || die "apt-get install failed: $(tail -n 5 "$log")"
    in_root "$tmp" apt-get clean
    say "packages installed in $(elapsed "$t0")"

    # malleo's Python dependencies (from its pyproject.toml) in the venv; malleo itself is
    # installed from the checkout on every run.
    t0=$(date +%s)
    mkdir -p "$tmp/src/deps"
    printf '%s\n' "$requirements" >"$tmp/src/deps/requirements.txt"
    in_root "$tmp" /usr/bin/python3 -m venv "$venv" >>"$log" 2>&1 || die "venv failed: $(tail -n 5 "$log")"
    in_root "$tmp" python -m pip install -q --disable-pip-version-check -r /src/deps/requirements.txt \
        >>"$log" 2>&1 || die "pip install of malleo's dependencies failed: $(tail -n 5 "$log")"
    rm -rf "$tmp/src/deps"
    say "venv with malleo's dependencies and mpi4py in $(elapsed "$t0")"
    unmount_all

    touch "$tmp/.malleo-rootfs-complete"
    rm -rf "$root"
    mv "$tmp" "$root"
    # Older root filesystems (another packages.txt) are of no further use.
    find "$cache" -mindepth 1 -maxdepth 1 -name 'rootfs-*' ! -name "rootfs-$key" -exec rm -rf {} +
}


build_rootfs
# build prints the root filesystem's path on stdout (podman-cluster.sh imports it as an image).
[ "$cmd" = build ] && { say "root filesystem ready at $root ($(elapsed "$t_start"))"; echo "$root"; exit 0; }

t0=$(date +%s)
copy_checkout "$repo" "$root"
mount_system "$root"
# The compiled core is cached by the hash of what the compile reads (the checkout's _core/,
# setup.py, pyproject.toml, and malleo/knobs.py + malleo/limits.py, from which setup.py
# generates _core/_knob_codes.pxi) in this root filesystem (key: its interpreter, Cython, numpy):
# 1-9 min of compiling per run (by load) saved while _core/ is unchanged. On a hit the built
# modules go back beside the fresh copy's sources and pip is not run: the venv's editable
# install (a finder mapping malleo to /src/malleo, the malleo script), made by the run that
# filled the cache, is in the root filesystem already and still points there.
core_key=$(cd "$repo" && { cat setup.py pyproject.toml malleo/knobs.py malleo/limits.py
                           git ls-files -z --cached --others --exclude-standard _core \
                               | sort -z | xargs -0 -r sha256sum; } | sha256sum | cut -c1-16)
core_tar="$cache/core-$key-$core_key.tar"
if [ -f "$core_tar" ] && [ -f "$root/.malleo-core-$core_key" ]; then
    tar -C "$root/src/malleo" -xf "$core_tar"
    say "malleo's compiled core reused ($core_tar: _core/ unchanged)"
else
    in_root "$root" /bin/sh -c "cd /src/malleo && MALLEO_CYTHON_DEBUG=1 python -m pip install -q \
        --disable-pip-version-check --no-deps --no-build-isolation -e ." >"$cache/install-$key.log" 2>&1 \
        || die "installing malleo in the chroot failed: $(tail -n 5 "$cache/install-$key.log")"
    find "$cache" -maxdepth 1 -name 'core-*.tar' -delete
    rm -f "$root"/.malleo-core-*
    (cd "$root/src/malleo" && tar -cf "$core_tar.partial" _core/*.so _core/.cython-directives) \
        && mv "$core_tar.partial" "$core_tar" && touch "$root/.malleo-core-$core_key"
fi
# The installed malleo must be this checkout's, compiled: a stale cache fails here, not later.
in_root "$root" /bin/sh -c "cd /tmp && malleo --version" >"$cache/version-$key.txt" 2>&1 \
    && grep -q "compiled Cython core (debug directives" "$cache/version-$key.txt" \
    || die "malleo in the chroot does not run from the checkout: $(cat "$cache/version-$key.txt")"
say "malleo installed from the checkout in $(elapsed "$t0"); Slurm $(in_root "$root" dpkg-query -W -f '${Version}' slurm-client)"

if [ "$cmd" = shell ]; then
    in_root "$root" /bin/bash -c "cd /src/malleo && exec bash -i" || true
    exit 0
fi

# Tests known not to work on Debian 13's packages, deselected here and said so; "NODE_ID|why"
# entries. test_accounting_records_jobs used to be here until local-slurm.sh
# created the accounting database itself (slurmdbd 24.11.5 creating it through libmariadb 3.4
# failed at start-up with "_check_mysql_concat_is_sane: null result from query").
broken=()
# The guides' shell blocks (tests/test_docs_shell.py) run in the host suite: here their
# `install-deps.sh` would apt-get `make` (not in packages.txt) into the cached root filesystem.
broken+=("tests/test_docs_shell.py::test_every_shell_block_runs_as_written|the guides' blocks run in the host suite; install-deps.sh would change the cached root")
if [ "$suite" = forky ]; then
    # Debian forky's Slurm 26.05.5-1 ships no mpi_pmix plugin (slurm-wlm-basic-plugins has only
    # mpi_pmi2 and mpi_cray_shasta; libpmix2t64 there is 7.0.0~rc1), and Open MPI 6 has no PMI2:
    # `srun --mpi=pmix` fails "Invalid MPI type 'pmix'". These launch MPI ranks with it.
    nopmix="forky's slurmd has no mpi_pmix plugin: srun --mpi=pmix cannot run"
    broken+=("tests/test_slurm_mpi.py::test_example_mpi_job_runs_one_rank_per_node|$nopmix"
             "tests/test_malleable_slurm.py::test_expand_then_shrink_for_a_waiting_job|$nopmix"
             "tests/test_malleable_slurm.py::test_failed_expand_keeps_the_job_on_its_nodes|$nopmix"
             "tests/test_malleable_slurm.py::test_rank_dying_after_an_expand_rolls_back|$nopmix"
             # 26.05.5's sched_backfill.so logs no "Started JobId=.. in .. on .." for a backfilled
             # job (only for het jobs): the twin's log reader misses those starts and the
             # measurement falls back to sacct's whole seconds (measured: 96.0% same order, 34
             # backfilled in both); the test asserts sub-second times from the log.
             "tests/test_twin.py::test_emulator_starts_slurm_s_jobs_in_the_same_order|26.05's backfill pass does not log its starts: the twin's sub-second replay cannot run (whole seconds gave 96.0% same order)")
fi
deselect=()
for entry in "${broken[@]}"; do
    deselect+=("--deselect=${entry%%|*}")
    say "deselected on $label: ${entry%%|*} (${entry#*|})"
done
# The twin's measurement (tests/test_twin.py's two tests on a private cluster of their own: a
# 300-job workload running about 5 minutes in real time, the machine mostly idle) runs in a
# pytest of its own beside the suite (MALLEO_TWIN_BESIDE=0: inside it, as before).
twin_tests=(tests/test_twin.py::test_live_import_round_trips
            tests/test_twin.py::test_emulator_starts_slurm_s_jobs_in_the_same_order)
twin_pid=""
set +e
if [ "${MALLEO_TWIN_BESIDE:-1}" = 1 ]; then
    twin_log="$cache/twin-beside-$key.log"
    in_root "$root" /bin/sh -c 'cd /src/malleo && exec python -m pytest -p no:cacheprovider "$@"' \
        pytest "${twin_tests[@]}" "${deselect[@]}" "$@" >"$twin_log" 2>&1 &
    twin_pid=$!
    t_twin=$(date +%s)
    for node in "${twin_tests[@]}"; do deselect+=("--deselect=$node"); done
    say "the twin's tests run beside the suite (pid $twin_pid, output at the end)"
fi
in_root "$root" /bin/sh -c 'cd /src/malleo && exec python -m pytest -m "slurm or mpi" "$@"' \
    pytest "${deselect[@]}" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    say "pytest collected no slurm or mpi tests: failing"
    rc=1
fi
rc_twin=0
if [ -n "$twin_pid" ]; then
    wait "$twin_pid"
    rc_twin=$?
    cat "$twin_log"
    [ "$rc_twin" -eq 5 ] && rc_twin=0        # PYTEST_ARGS selected none of them
    say "$label, the twin's tests beside: exit $rc_twin in $(elapsed "$t_twin")"
fi
set -e
say "$label suite exit $rc, twin exit $rc_twin; whole run $(elapsed "$t_start")"
[ "$rc" -eq 0 ] && rc=$rc_twin
exit "$rc"
