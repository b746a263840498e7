#!/usr/bin/env bash
# Build a Slurm source tarball into a prefix under /var/tmp, cached by content hash.
#
#   build-slurm.sh [--deps] [--print-prefix] [TARBALL]
#
# TARBALL defaults to $MALLEO_SLURM_TARBALL, else /work/shared/vendor/slurm-25.11.7.tar.xz
# (the vendored Slurm 25.11.7; its README gives origin, licence and sha256).
# The prefix is CACHE/malleo-slurm-<VERSION>-<KEY>, CACHE = $MALLEO_CACHE_DIR (default /var/tmp;
# another directory measures a cold build without touching the shared caches), KEY = the first
# 16 hex digits of sha256(tarball sha256 + this script's configure options and CFLAGS): a second
# run with the same tarball and options finds PREFIX/.malleo-built and returns at once (no
# rebuild). The build tree lives in CACHE/malleo-slurm-build-<KEY> and is removed after
# `make install`.
#
# What the agent needs, and how it is switched on:
#   munge auth (auth/munge, cred/munge)          libmunge-dev (configure stops without it)
#   squeue/sinfo --json (serializer/json)          libjson-c-dev
#   slurmdbd's accounting_storage/mysql plugin     libmariadb-dev (mariadb_config)
#   srun --mpi=pmix (Debian's Open MPI)             libpmix-dev (/usr/lib/x86_64-linux-gnu/pmix2)
# --enable-multiple-slurmd: several slurmd per host (local-slurm.sh's virtual nodes).
# Left out to shorten the build: static libraries, slurmrestd, sview, X11, HDF5, NVML/RSMI, UCX, lua, PAM, debug.
# Compiled with CFLAGS="-O0 -g0 -pipe" (Slurm's default is -g -O2): a test cluster of virtual
# nodes does not need optimised daemons, and gcc at -O0 without debug information takes a
# fraction of the time (measured figures: docs/sysadmins.md).
# --deps installs those -dev packages (apt, as root) when missing.
# --print-prefix prints the prefix (building first if needed) and nothing else on stdout.
# Output of configure/make goes to PREFIX.log; on failure the log's tail is shown and exit is 1.
set -euo pipefail

deps=0
print_prefix=0
tarball="${MALLEO_SLURM_TARBALL:-/work/shared/vendor/slurm-25.11.7.tar.xz}"
while [ $# -gt 0 ]; do
    case "$1" in
        --deps) deps=1 ;;
        --print-prefix) print_prefix=1 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        -*) echo "build-slurm.sh: unknown option $1" >&2; exit 2 ;;
        *) tarball="$1" ;;
    esac
    shift
done

say() { if [ "$print_prefix" = 1 ]; then echo "build-slurm.sh: $*" >&2; else echo "build-slurm.sh: $*"; fi; }
die() { echo "build-slurm.sh: $*" >&2; exit 2; }

[ -f "$tarball" ] || die "no Slurm tarball at $tarball (set MALLEO_SLURM_TARBALL or pass the path)"
case "$(basename "$tarball")" in
    slurm-*.tar.xz|slurm-*.tar.bz2|slurm-*.tar.gz) ;;
    *) die "$tarball: expected slurm-VERSION.tar.{xz,bz2,gz}" ;;
esac
version="$(basename "$tarball")"
version="${version#slurm-}"
version="${version%.tar.*}"

pmix_dir=/usr/lib/x86_64-linux-gnu/pmix2
configure_opts=(
    # Many slurmd on one host (local-slurm.sh's virtual nodes): without it 25.11 logs
    # "Duplicated NodeHostName", cannot address n2..n16 ("_fwd_tree_get_addr: can't find
    # address for host n2") and jobs stay COMPLETING on them. Debian builds with it too.
    --enable-multiple-slurmd --disable-static
    --disable-slurmrestd --disable-sview --disable-x11 --disable-debug
    --without-hdf5 --without-nvml --without-rsmi --without-ucx --without-lua
    --without-rdkafka --without-freeipmi
    --with-munge=/usr --with-json=/usr
)
[ -d "$pmix_dir" ] && configure_opts+=("--with-pmix=$pmix_dir")

# MALLEO_SLURM_CFLAGS: other flags (in the key), e.g. "-O2 -g0 -pipe" for a site-like build
# to measure the live cycle against (bench/live_cycle.py; docs/core.md).
build_cflags="${MALLEO_SLURM_CFLAGS:--O0 -g0 -pipe}"
build_targets="src install-pkgincludeHEADERS"    # in the key: what the prefix holds
cache_dir="${MALLEO_CACHE_DIR:-/var/tmp}"
tar_sha="$(sha256sum "$tarball" | cut -d' ' -f1)"
key="$(printf '%s %s CFLAGS=%s targets=%s\n' "$tar_sha" "${configure_opts[*]}" "$build_cflags" \
       "$build_targets" | sha256sum | cut -c1-16)"
prefix="$cache_dir/malleo-slurm-$version-$key"
stamp="$prefix/.malleo-built"

if [ -f "$stamp" ]; then
    say "cached: Slurm $version in $prefix"
    [ "$print_prefix" = 1 ] && echo "$prefix"
    exit 0
fi

need_pkgs=(libmunge-dev libjson-c-dev libmariadb-dev libyaml-dev pkg-config make gcc xz-utils)
missing=()
for p in "${need_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$deps" = 1 ] && [ "$(id -u)" = 0 ]; then
        say "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y \
            --no-install-recommends "${missing[@]}" >&2
    else
        die "missing build packages: ${missing[*]} (apt-get install them as root, or pass --deps as root)"
    fi
fi

mkdir -p "$cache_dir"
exec 9>"$cache_dir/malleo-slurm-$key.lock"
flock 9
if [ -f "$stamp" ]; then     # another run built it while we waited for the lock
    say "cached: Slurm $version in $prefix"
    [ "$print_prefix" = 1 ] && echo "$prefix"
    exit 0
fi

build="$cache_dir/malleo-slurm-build-$key"
log="$prefix.log"
rm -rf "$build" "$prefix"
mkdir -p "$build"
start=$(date +%s)
say "building Slurm $version (sha256 $tar_sha) into $prefix; log $log"
(
    set -e
    tar -C "$build" -xf "$tarball"
    cd "$build/slurm-$version"
    t=$(date +%s)
    ./configure --prefix="$prefix" --sysconfdir="$prefix/etc" "${configure_opts[@]}" CFLAGS="$build_cflags"
    echo "build-slurm.sh: configure took $(( $(date +%s) - t )) s"
    for cond in WITH_MUNGE WITH_JSON_PARSER WITH_MYSQL; do    # fail in 1 min, not after make
        grep -q "^${cond}_TRUE=''" config.log || { echo "configure: $cond is off (missing -dev package?)"; exit 1; }
    done
    # Only src/ (daemons, commands, libraries, plugins) and the public headers: the top
    # level also builds doc/ (an HTML page per .shtml through Python, the man pages),
    # testsuite/ and etc/, which nothing here uses.
    t=$(date +%s)
    make -j"${MALLEO_BUILD_JOBS:-2}" -C src
    echo "build-slurm.sh: make -C src took $(( $(date +%s) - t )) s"
    t=$(date +%s)
    make -j"${MALLEO_BUILD_JOBS:-2}" -C src install
    make install-pkgincludeHEADERS
    echo "build-slurm.sh: make install took $(( $(date +%s) - t )) s"
) >"$log" 2>&1 || { tail -40 "$log" >&2; echo "build-slurm.sh: Slurm build failed; log $log" >&2; exit 1; }
for f in bin/squeue bin/sbatch sbin/slurmctld sbin/slurmd sbin/slurmdbd \
         lib/slurm/serializer_json.so lib/slurm/auth_munge.so lib/slurm/accounting_storage_mysql.so; do
    [ -e "$prefix/$f" ] || { echo "build-slurm.sh: $prefix/$f missing after install; log $log" >&2; exit 1; }
done
rm -rf "$build"
printf 'version=%s\ntarball_sha256=%s\nconfigure=%s\ncflags=%s\nseconds=%s\n' \
    "$version" "$tar_sha" "${configure_opts[*]}" "$build_cflags" "$(( $(date +%s) - start ))" >"$stamp"
say "built Slurm $version in $(( $(date +%s) - start )) s: $prefix"
[ "$print_prefix" = 1 ] && echo "$prefix"
exit 0
