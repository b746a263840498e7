# malleo: `make test` does all the set-up a fresh Debian 12/13 machine needs, then runs the suite.
#
#   make test      Python test deps, (as root) Debian's Slurm/munge/Open MPI (and slurmdbd
#                  with MariaDB, for the malleable-job tests) when missing,
#                  a debug build of the Cython core (MALLEO_CYTHON_DEBUG=1), a real Slurm on
#                  localhost (slurm-docker/local-slurm.sh), the whole suite, Slurm torn down.
#                  Then the same slurm- and mpi-marked tests on Debian 13 / Slurm 24.11 in a
#                  debootstrap chroot with the Docker image's packages (make test-trixie;
#                  MALLEO_SKIP_TRIXIE=1 skips it on a developer's machine, never in CI).
#   make test-trixie  only that chroot suite (slurm-docker/chroot.sh; docs/docker.md)
#   make test-slurm-25.11  Slurm 25.11.7 built from ../shared/vendor and pyslurm 25.11 built
#                  against it (both cached under /var/tmp by content hash), then the slurm and
#                  mpi tests on a local 25.11 cluster with the CLI backend and the slurm tests
#                  with the pyslurm backend (slurm-docker/prefix-suite.sh; docs/sysadmins.md)
#   make test-forky  the slurm and mpi tests on Debian forky / Slurm 26.05 in a debootstrap
#                  chroot (MALLEO_CHROOT_SUITE=forky slurm-docker/chroot.sh)
#   make test-versions  both of the above (make test runs them after the trixie suite, and
#                  starts their cached builds in the background first, overlapping the host
#                  suite: slurm-docker/prebuild-versions.sh)
#   make build     build the extensions in place (release directives)
#   make bench     the bench/ scripts on ../shared/traces (figures, never assertions)
#   make annotate  cython -a reports of _core/*.pyx into build/annotate/

PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
PYTEST_ARGS ?=
# the release directives of setup.py, so `make annotate` shows what the release build runs
ANNOTATE_DIRECTIVES = -X boundscheck=False -X wraparound=False -X initializedcheck=False -X nonecheck=False -X cdivision=True
TRIXIE_PYTEST_ARGS ?=
SLURM_2511_PYTEST_ARGS ?=
FORKY_PYTEST_ARGS ?=

.PHONY: test-slurm-25.11 test-forky test-versions
.PHONY: test test-trixie deps system-deps build build-debug bench annotate clean

test: deps system-deps build-debug
	PYTHON=$(PYTHON) bash slurm-docker/prebuild-versions.sh
	bash tests/run-suite.sh $(PYTEST_ARGS)
	bash slurm-docker/chroot.sh run $(TRIXIE_PYTEST_ARGS)
	$(MAKE) test-versions

test-trixie:
	bash slurm-docker/chroot.sh run $(TRIXIE_PYTEST_ARGS)

deps:
	$(PIP) install --quiet --disable-pip-version-check 'Cython>=3.0' 'setuptools>=68' numpy
	$(PIP) install --quiet --disable-pip-version-check -e '.[test]'

system-deps:
	bash slurm-docker/install-deps.sh --accounting

build:
	MALLEO_CYTHON_FORCE=1 $(PYTHON) setup.py build_ext --inplace --quiet

build-debug:
	MALLEO_CYTHON_DEBUG=1 MALLEO_CYTHON_FORCE=1 $(PYTHON) setup.py build_ext --inplace --quiet

bench: build
	$(PYTHON) bench/run_all.py

annotate:
	mkdir -p build/annotate
	cd _core && for f in *.pyx; do $(PYTHON) -m cython -3 -a -I . $(ANNOTATE_DIRECTIVES) $$f -o ../build/annotate/$${f%.pyx}.c; done
	@echo "open build/annotate/*.html"

clean:
	rm -rf build dist *.egg-info _core/*.c _core/*.html _core/*.so .pytest_cache .hypothesis

# --- further Slurm versions (issue 14) ------------------------------------------------------

test-versions: test-slurm-25.11 test-forky

test-slurm-25.11:
	PYTHON=$(PYTHON) bash slurm-docker/prefix-suite.sh $(SLURM_2511_PYTEST_ARGS)

test-forky:
	MALLEO_CHROOT_SUITE=forky bash slurm-docker/chroot.sh run $(FORKY_PYTEST_ARGS)
