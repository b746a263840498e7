# malleo: `make test` does all the set-up a fresh Debian 12/13 machine needs, then runs the suite.
#
#   make test      Python test deps, (as root) Debian's Slurm/munge/Open MPI (and slurmdbd
#                  with MariaDB, for the malleable-job tests) when missing,
#                  a debug build of the Cython core (MALLEO_CYTHON_DEBUG=1), then two lanes
#                  side by side (tests/lanes.sh; docs/testing.md, "make test's time"):
#                  the live lane runs one Slurm version at a time: the integration tests on
#                  localhost's Slurm 22.05 (make test-host-integration: a real Slurm from
#                  slurm-docker/local-slurm.sh, torn down after), Debian 13 / Slurm 24.11 in
#                  a debootstrap chroot with the Docker image's packages (make test-trixie;
#                  MALLEO_SKIP_TRIXIE=1 skips it on a developer's machine, never in CI), Debian
#                  forky / Slurm 26.05, Slurm 25.11 with both backends (below;
#                  MALLEO_SKIP_SLURM_2511=1, MALLEO_SKIP_FORKY=1 skip them, never in CI), then
#                  the container cluster; the twin's 5-minute live measurement runs beside
#                  each version's suite. The CPU lane (make test-cpu-lane, niced) runs the unit
#                  tests, then Debian 12's python3, in the background meanwhile.
#   make test-host-integration  the live lane's first part alone (no set-up; make
#                  test-integration does the set-up and runs the twin inside the suite)
#   make test-cpu-lane / test-live-lane  one lane of make test alone (no set-up)
#   make test-trixie  only that chroot suite (slurm-docker/chroot.sh; docs/docker.md)
#   make test-containers  the slurm-docker images built with podman on that chroot's root
#                  filesystem (no registry), compose.yaml's cluster started, a workload, the
#                  agent and a malleable MPI job run and checked across containers, all torn
#                  down (slurm-docker/podman-cluster.sh; MALLEO_SKIP_CONTAINERS=1 skips it on
#                  a developer's machine, never in CI). make test runs it after the chroot suite.
#   make test-slurm-25.11  Slurm 25.11.7 built from ../shared/vendor and pyslurm 25.11 built
#                  against it (both cached under /var/tmp by content hash), then the slurm and
#                  mpi tests on a local 25.11 cluster with the CLI backend and the slurm tests
#                  with the pyslurm backend (slurm-docker/prefix-suite.sh; docs/sysadmins.md)
#   make test-forky  the slurm and mpi tests on Debian forky / Slurm 26.05 in a debootstrap
#                  chroot (MALLEO_CHROOT_SUITE=forky slurm-docker/chroot.sh)
#   make test-versions  both of the above, their cached builds started first in the background
#                  (slurm-docker/prebuild-versions.sh). make test runs both after the Debian 13
#                  suite, the builds started in the background before the host suite
#                  (cold and warm times: docs/testing.md).
#   make test-debian-python  README's first command and the non-Slurm suite with Debian 12's own
#                  python3 in a debootstrap chroot (tests/debian-python.sh; docs/testing.md);
#                  make test runs it last (MALLEO_SKIP_DEBIAN_PYTHON=1 skips it, never in CI)
#   make test-python  make test's Python part only (no Slurm, no MPI tests)
#   make test-unit  the unit tests (pytest -m unit: the built core and Python, no service)
#   make test-integration  the integration tests (pytest -m integration: every test marked
#                  slurm or mpi) against a local Slurm 22.05 and Open MPI (docs/testing.md)
#   make deps      only the virtual environment with malleo's requirements (tests/python-env.sh)
#   make build     install malleo from the checkout (editable), extensions in place, release
#   make build-debug  the same with the debug directives (what make test uses)
#   make bench     the bench/ scripts on ../shared/traces (figures, never assertions)
#   make annotate  cython -a reports of _core/*.pyx into build/annotate/

# The virtual environment every Python step runs in (Debian's python3 is externally managed,
# PEP 668): the active one ($VIRTUAL_ENV) when make runs inside one, otherwise .venv in the
# checkout, made from python3 and kept while pyproject.toml's requirements are unchanged.
VENV ?= $(or $(VIRTUAL_ENV),$(CURDIR)/.venv)
PYTHON ?= $(VENV)/bin/python
PIP ?= $(PYTHON) -m pip
PYTEST_ARGS ?=
# the release directives of setup.py, so `make annotate` shows what the release build runs
ANNOTATE_DIRECTIVES = -X boundscheck=False -X wraparound=False -X initializedcheck=False -X nonecheck=False -X cdivision=True
TRIXIE_PYTEST_ARGS ?=
SLURM_2511_PYTEST_ARGS ?=
FORKY_PYTEST_ARGS ?=

.PHONY: test-slurm-25.11 test-forky test-versions
.PHONY: test test-trixie deps system-deps build build-debug bench annotate clean
.PHONY: venv test-debian-python test-python system-deps-python

# Two lanes side by side (tests/lanes.sh; docs/testing.md, "make test's time"): the CPU lane
# (the unit tests, then Debian 12's python3; niced, like the background builds, so that the
# live tests keep their CPU) beside the live lane (each Slurm version's suite alone, one after
# another, then the container cluster).
test: system-deps deps build-debug
	PYTHON=$(PYTHON) bash slurm-docker/prebuild-versions.sh
	bash tests/lanes.sh cpu "nice -n 10 $(MAKE) --no-print-directory test-cpu-lane" \
	    $(MAKE) --no-print-directory test-live-lane

# make test's lanes, without its set-up (system-deps deps build-debug: run them first).
.PHONY: test-cpu-lane test-live-lane test-host-integration
test-cpu-lane:
	PYTHON=$(PYTHON) PATH=$(VENV)/bin:$$PATH bash tests/run-suite.sh -m unit -p no:cacheprovider $(PYTEST_ARGS)
	bash tests/debian-python.sh

# 26.05 before 25.11: on a cold run Slurm 25.11 and pyslurm (about 20 min of compiling,
# started in the background by prebuild-versions.sh) get the forky suite's time to finish.
# Every part runs even after one failed (tests/live-lane.sh prints each part's status).
test-live-lane:
	MAKE="$(MAKE)" bash tests/live-lane.sh test-host-integration test-trixie test-forky \
	    test-slurm-25.11 test-containers

# Slurm 22.05 (Debian 12, the host): the integration tests with the twin beside them.
test-host-integration:
	MALLEO_TWIN_BESIDE=1 PYTHON=$(PYTHON) PATH=$(VENV)/bin:$$PATH bash tests/run-suite.sh -m integration $(PYTEST_ARGS)

test-trixie:
	bash slurm-docker/chroot.sh run $(TRIXIE_PYTEST_ARGS)

# The venv with malleo's build, run and test requirements (malleo itself: build, build-debug).
deps venv:
	bash tests/python-env.sh $(VENV)

test-debian-python:
	bash tests/debian-python.sh

# The unit / integration split (tests/conftest.py marks every test one or the other).
.PHONY: test-unit test-integration
test-unit: deps build-debug
	PYTHON=$(PYTHON) PATH=$(VENV)/bin:$$PATH bash tests/run-suite.sh -m unit $(PYTEST_ARGS)

test-integration: system-deps deps build-debug
	PYTHON=$(PYTHON) PATH=$(VENV)/bin:$$PATH bash tests/run-suite.sh -m integration $(PYTEST_ARGS)

# make test's Python part: no Slurm, no MPI (what tests/debian-python.sh runs on Debian 12).
test-python: system-deps-python deps build-debug
	PYTHON=$(PYTHON) PATH=$(VENV)/bin:$$PATH bash tests/run-suite.sh -m "not slurm and not mpi" $(PYTEST_ARGS)

system-deps-python:
	bash slurm-docker/install-deps.sh --python

system-deps:
	bash slurm-docker/install-deps.sh --accounting

# malleo installed from this checkout in editable mode, the extensions compiled in place (one
# full compile: setuptools builds an editable install's extensions in a temporary folder).
build: deps
	$(PIP) install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .

build-debug: deps
	MALLEO_CYTHON_DEBUG=1 $(PIP) install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .

bench: deps build
	$(PYTHON) bench/run_all.py

annotate:
	mkdir -p build/annotate
	cd _core && for f in *.pyx; do $(PYTHON) -m cython -3 -a -I . $(ANNOTATE_DIRECTIVES) $$f -o ../build/annotate/$${f%.pyx}.c; done
	@echo "open build/annotate/*.html"

clean:
	rm -rf build dist *.egg-info _core/*.c _core/*.html _core/*.so _core/.cython-directives .pytest_cache .hypothesis

# --- the container cluster, built and run with podman (issue 14) ----------------------------

# The venv's python runs slurm-docker/compose_podman.py (it needs PyYAML).
.PHONY: test-containers
test-containers: deps
	PYTHON=$(PYTHON) bash slurm-docker/podman-cluster.sh test

# --- further Slurm versions (issue 14) ------------------------------------------------------

test-versions:
	PYTHON=$(PYTHON) bash slurm-docker/prebuild-versions.sh
	$(MAKE) test-slurm-25.11
	$(MAKE) test-forky

test-slurm-25.11:
	PYTHON=$(PYTHON) bash slurm-docker/prefix-suite.sh $(SLURM_2511_PYTEST_ARGS)

test-forky:
	MALLEO_CHROOT_SUITE=forky bash slurm-docker/chroot.sh run $(FORKY_PYTEST_ARGS)
