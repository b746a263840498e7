"""Why the libslurm backend (plugin/backends/libslurm_backend.py) cannot run, said before
anything is loaded: no library, a header of another Slurm than the running one, no slurm.conf
file; ``select_backend("auto")`` then falls back to the CLI backend with that reason logged,
and ``"libslurm"`` raises it.  And the layout program's version switch: a 22.05-style
``node_info_t`` (22.05 and 24.11: no ``alloc_cpus``, ``select_nodeinfo`` instead) and 25.11's each give
the field they have.  The headers here are small stand-ins compiled for real (they need a C
compiler, as the backend does); the backend's reads are checked live against the CLI backend
in tests/test_slurm_libslurm.py."""
import logging
import shutil

import pytest

from malleo.plugin.backends import libslurm_backend, libslurm_rows, select_backend
from malleo.plugin.backends.cli import CliBackend
from malleo.plugin.backends.errors import BackendNotAvailable, SlurmConfigError
from slurm_headers import stand_in_header

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler: the layout program cannot be built")

def _prefix(tmp_path, major, minor):
    """A Slurm prefix with a stand-in header of that version and an (empty) libslurm.so."""
    header = tmp_path / "include" / "slurm" / "slurm.h"
    header.parent.mkdir(parents=True)
    header.write_text(stand_in_header(major, minor))
    lib = tmp_path / "lib" / "libslurm.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    return lib


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("MALLEO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MALLEO_SLURM_INCLUDE", raising=False)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setattr(libslurm_rows, "_initialised_with", None)
    return monkeypatch


@pytest.mark.parametrize("version, field", [((22, 5), "select_nodeinfo"),
                                            ((24, 11), "select_nodeinfo"),
                                            ((25, 11), "alloc_cpus")])
def test_the_layout_reads_the_allocated_cpus_field_the_version_has(tmp_path, env, version,
                                                                   field):
    lib = _prefix(tmp_path / "prefix", *version)
    lay = libslurm_rows.layout(libslurm_rows.header_for(str(lib)))
    assert lay["version"][0] >> 16 == version[0]
    assert f"node_info_t.{field}" in lay
    other = {"alloc_cpus", "select_nodeinfo"} - {field}
    assert f"node_info_t.{other.pop()}" not in lay
    dtype = libslurm_rows._dtype(lay, "node_info_t", "sizeof.node_info_t")
    assert field in dtype.names and dtype.itemsize == lay["sizeof.node_info_t"][0]


def test_no_library_is_said_with_what_to_install(tmp_path, env):
    env.setenv("MALLEO_LIBSLURM", str(tmp_path / "nowhere" / "libslurm.so"))
    reason = libslurm_backend.unavailable_reason(None, (22, 5))
    assert "no libslurm.so" in reason and "libslurm-dev" in reason
    assert str(tmp_path / "nowhere") in reason


def test_a_header_of_another_slurm_is_refused(tmp_path, env):
    env.setenv("MALLEO_LIBSLURM", str(_prefix(tmp_path / "prefix", 22, 5)))
    reason = libslurm_backend.unavailable_reason(None, (24, 11))
    assert "is Slurm 22.05 but the cluster runs 24.11" in reason


def test_no_slurm_conf_file_is_said(tmp_path, env):
    env.setenv("MALLEO_LIBSLURM", str(_prefix(tmp_path / "prefix", 24, 11)))
    assert "no slurm.conf file named" in libslurm_backend.unavailable_reason(None, (24, 11))
    missing = tmp_path / "etc" / "slurm.conf"
    assert (f"slurm.conf {missing}: no such file"
            in libslurm_backend.unavailable_reason(str(missing), (24, 11)))
    missing.parent.mkdir()
    missing.write_text("ClusterName=x\n")
    assert libslurm_backend.unavailable_reason(str(missing), (24, 11)) is None
    # all found, but the library is no library: loading it says so, nothing initialised
    with pytest.raises(BackendNotAvailable, match="cannot load"):
        libslurm_backend.LibslurmBackend(conf=str(missing), running=(24, 11))
    assert libslurm_rows._initialised_with is None


def test_auto_falls_back_to_the_cli_with_the_reason_logged(tmp_path, env, caplog):
    from malleo.plugin.backends import pyslurm_backend

    if pyslurm_backend.pyslurm is not None:
        pytest.skip("pyslurm imports here: auto tries it first")
    env.setenv("MALLEO_LIBSLURM", str(_prefix(tmp_path / "prefix", 22, 5)))
    env.setattr(CliBackend, "version", lambda self: (24, 11, 6))    # the running Slurm
    with caplog.at_level(logging.WARNING, logger="malleo.plugin.backends"):
        backend = select_backend(kind="auto")
    assert type(backend) is CliBackend
    assert "is Slurm 22.05 but the cluster runs 24.11" in backend.libslurm_unavailable
    assert any("reading Slurm through its commands" in r.getMessage()
               and "22.05" in r.getMessage() for r in caplog.records)
    with pytest.raises(BackendNotAvailable, match="the libslurm backend cannot be used: "
                                                  "slurm.h next to"):
        select_backend(kind="libslurm")


def test_unknown_kind_names_the_four():
    with pytest.raises(ValueError, match="expected auto, cli, libslurm or pyslurm"):
        select_backend(kind="slurmrestd")


def _fatal(path):
    """What Slurm's fatal() does: its message on standard error, then exit(1)."""
    import os

    os.write(2, f"slurm: error: Parse error in file {path} line 3\nslurm: fatal: "
                f"Unable to process configuration file\n".encode())
    os._exit(1)


def test_an_initialisation_that_would_end_the_process_is_refused(tmp_path, env):
    """libslurm's slurm_init ends the process (fatal()) on a slurm.conf it cannot parse: the
    forked probe sees that and initialise refuses with Slurm's words, this process alive and
    nothing initialised; an init that returns is then called here."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=a CPUs=zz\n")
    with pytest.raises(SlurmConfigError,
                       match=rf"slurm.conf {conf}: libslurm cannot initialise with it: "
                             rf"slurm: error: Parse error in file {conf} line 3 slurm: fatal"):
        libslurm_rows.initialise(str(conf), _fatal)
    with pytest.raises(BackendNotAvailable, match="libslurm cannot initialise with it: "
                                                  "exit status 7"):
        libslurm_rows.initialise(str(conf), lambda p: __import__("os")._exit(7))
    assert libslurm_rows._initialised_with is None

    def raises(path):
        raise OSError("no such symbol")

    assert libslurm_rows.init_probe(raises, None) == "OSError: no such symbol"
    assert libslurm_rows.init_probe(lambda p: __import__("time").sleep(30), None,
                                    timeout=0.5) == "still initialising after 0.5 s"
    called = []
    libslurm_rows.initialise(str(conf), called.append)
    assert called == [str(conf)] and libslurm_rows._initialised_with == str(conf)


def test_the_site_libslurm_refuses_a_broken_slurm_conf_without_ending_us(tmp_path, env):
    """The same with the real libslurm's slurm_init (Debian's libslurm here): the message is
    Slurm's own parse error, naming the file and line."""
    import ctypes

    try:
        lib = libslurm_backend.find_library()
    except libslurm_rows.LayoutUnavailable as exc:
        pytest.skip(str(exc))
    handle = ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    handle.slurm_init.argtypes = [ctypes.c_char_p]
    handle.slurm_init.restype = None
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=h\nNodeName=a CPUs=zz\nNoSuchKey=1\n")
    with pytest.raises(SlurmConfigError) as info:
        libslurm_rows.initialise(str(conf), lambda p: handle.slurm_init(p.encode()))
    assert f"slurm.conf {conf}: libslurm cannot initialise with it: " in str(info.value)
    assert f"Parse error in file {conf} line 3" in str(info.value)
    assert libslurm_rows._initialised_with is None
