#!/usr/bin/env bash
# Build pyslurm (PyPI sdist) against a Slurm prefix made by build-slurm.sh, cached by hash.
#
#   build-pyslurm.sh --prefix SLURM_PREFIX [--python PYTHON] [--print-site]
#
# pyslurm's setup.py reads SLURM_INCLUDE_DIR / SLURM_LIB_DIR (libslurmfull.so is searched in
# LIB_DIR, LIB_DIR/slurm, LIB_DIR/slurm-wlm) and refuses a Slurm whose major.minor differs
# from its own ("Slurm version mismatch"). PYSLURM_VERSION (default 25.11.2) must match the
# prefix's Slurm. The build runs without build isolation (PYTHON's own Cython and setuptools),
# cythonizes with PYSLURM_BUILD_JOBS=2 and compiles with build_ext's parallel=2 and
# CFLAGS="-O0 -g0 -pipe" (appended to Python's -O3 -g: most of the cold time was gcc
# optimising Cython's generated C; a test backend does not need it).
# The result is a `pip install --target` directory:
#   CACHE/malleo-pyslurm-<VERSION>-<KEY>/site    (CACHE: $MALLEO_CACHE_DIR, default /var/tmp)
# KEY = sha256 of (the prefix's Slurm version and tarball sha256, pyslurm version, PYTHON's
# version, the CFLAGS)[:16];
# a second run with the same inputs returns at once. Use it with
#   PYTHONPATH=SITE LD_LIBRARY_PATH=SLURM_PREFIX/lib/slurm:SLURM_PREFIX/lib
# --print-site prints SITE (building first if needed) and nothing else on stdout.
set -euo pipefail

prefix="" python="${PYTHON:-python3}" print_site=0
version="${PYSLURM_VERSION:-25.11.2}"
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a value}"; shift 2 ;;
        --python) python="${2:?--python needs a value}"; shift 2 ;;
        --print-site) print_site=1; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "build-pyslurm.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
# A relative interpreter path would not survive the build's cd.
case "$python" in
    /*) ;;
    */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;;
esac
say() { echo "build-pyslurm.sh: $*" >&2; }
die() { say "$*"; exit 2; }
[ -n "$prefix" ] || die "--prefix SLURM_PREFIX is required (slurm-docker/build-slurm.sh --print-prefix)"
[ -f "$prefix/.malleo-built" ] || die "--prefix $prefix: not a finished build-slurm.sh prefix (no .malleo-built)"
[ -f "$prefix/include/slurm/slurm_version.h" ] || die "$prefix/include/slurm/slurm_version.h missing"

pyver=$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') \
    || die "--python $python does not run"
# The Slurm side of the key is its version and tarball only: pyslurm compiles against Slurm's
# public headers, which configure options do not change, and finds libslurmfull through
# LD_LIBRARY_PATH=PREFIX/lib/slurm (searched before the RUNPATH it was linked with).
build_cflags="-O0 -g0 -pipe"
key=$(printf '%s\npyslurm %s\npython %s\nCFLAGS %s\n' \
      "$(grep -E '^(version|tarball_sha256)=' "$prefix/.malleo-built")" "$version" "$pyver" \
      "$build_cflags" | sha256sum | cut -c1-16)
out="${MALLEO_CACHE_DIR:-/var/tmp}/malleo-pyslurm-$version-$key"
site="$out/site"

# Import only (no slurm.conf here: pyslurm's import-time slurm_init would end the process).
check() {
    PYSLURM_DISABLE_AUTO_INIT=1 PYTHONPATH="$site" LD_LIBRARY_PATH="$prefix/lib/slurm:$prefix/lib" "$python" -c \
        'import pyslurm, sys; sys.stdout.write(pyslurm.__version__)' 2>/dev/null
}

finish() {
    say "pyslurm $(check) for Python $pyver in $site"
    [ "$print_site" = 1 ] && echo "$site"
    exit 0
}

[ -f "$out/.malleo-built" ] && finish
exec 9>"$out.lock"
flock 9
[ -f "$out/.malleo-built" ] && finish

start=$(date +%s)
work="$out.build"
log="$out.log"
rm -rf "$out" "$work"
mkdir -p "$work"
say "building pyslurm $version against $prefix (Python $pyver); log $log"
(
    set -e
    cd "$work"
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
        --no-build-isolation "pyslurm==$version" -d "$work"
    tar -xzf "pyslurm-$version.tar.gz"
    printf '[build_ext]\nparallel = %s\n' "${MALLEO_BUILD_JOBS:-2}" >"$work/parallel.cfg"
    cd "pyslurm-$version"
    SLURM_INCLUDE_DIR="$prefix/include" SLURM_LIB_DIR="$prefix/lib" CFLAGS="$build_cflags" \
        PYSLURM_BUILD_JOBS="${MALLEO_BUILD_JOBS:-2}" DIST_EXTRA_CONFIG="$work/parallel.cfg" \
        "$python" -m pip install -v --disable-pip-version-check --no-deps --no-build-isolation \
        --target "$site" .
    # Cython's generated C is not needed at run time (about 40 MB).
    find "$site" -name '*.c' -delete
) >"$log" 2>&1 || { tail -30 "$log" >&2; say "pyslurm build failed; log $log"; exit 1; }
got=$(check) || { say "pyslurm built but does not import: $(PYSLURM_DISABLE_AUTO_INIT=1 PYTHONPATH="$site" LD_LIBRARY_PATH="$prefix/lib/slurm:$prefix/lib" "$python" -c 'import pyslurm' 2>&1 | tail -3)"; exit 1; }
rm -rf "$work"
printf 'pyslurm=%s\npython=%s\nslurm_prefix=%s\nseconds=%s\n' "$got" "$pyver" "$prefix" \
    "$(( $(date +%s) - start ))" >"$out/.malleo-built"
say "built in $(( $(date +%s) - start )) s"
finish
