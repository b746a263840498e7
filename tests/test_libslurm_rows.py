"""The pyslurm backend's column reader where it cannot work (plugin/backends/libslurm_rows.py):
no header, or a header the layout program cannot build against, is a LayoutUnavailable
naming what is missing, so the backend falls back to pyslurm's objects with the reason.
Its reads themselves are checked live on Slurm 25.11 against the CLI backend's
(tests/test_slurm_backends_equal.py)."""
import pytest

from malleo.plugin.backends import libslurm_rows
from slurm_headers import stand_in_header


def test_no_header_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv("MALLEO_SLURM_INCLUDE", raising=False)
    lib = tmp_path / "prefix" / "lib" / "libslurm.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    # the system's include folder, without slurm.h (this machine may have libslurm-dev)
    monkeypatch.setattr(libslurm_rows, "SYSTEM_INCLUDE", tmp_path / "usr-include")
    with pytest.raises(libslurm_rows.LayoutUnavailable) as err:
        libslurm_rows.header_for(str(lib))
    text = str(err.value)
    assert "no slurm/slurm.h" in text and str(tmp_path / "prefix" / "include") in text
    assert "MALLEO_SLURM_INCLUDE" in text


def test_header_is_found_next_to_the_library_and_in_the_variable(tmp_path, monkeypatch):
    lib = tmp_path / "prefix" / "lib" / "libslurm.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    header = tmp_path / "prefix" / "include" / "slurm" / "slurm.h"
    header.parent.mkdir(parents=True)
    header.write_text("/* empty */\n")
    monkeypatch.delenv("MALLEO_SLURM_INCLUDE", raising=False)
    assert libslurm_rows.header_for(str(lib)) == header
    other = tmp_path / "other" / "slurm" / "slurm.h"
    other.parent.mkdir(parents=True)
    other.write_text("/* empty */\n")
    monkeypatch.setenv("MALLEO_SLURM_INCLUDE", str(tmp_path / "other"))
    assert libslurm_rows.header_for(str(lib)) == other


def test_a_header_without_the_structs_is_refused_and_nothing_cached(tmp_path, monkeypatch):
    header = tmp_path / "include" / "slurm" / "slurm.h"
    header.parent.mkdir(parents=True)
    header.write_text("/* not Slurm's header: no job_info_msg_t */\n")
    monkeypatch.setenv("MALLEO_CACHE_DIR", str(tmp_path / "cache"))
    if libslurm_rows.shutil.which("cc") is None and libslurm_rows.shutil.which("gcc") is None:
        with pytest.raises(libslurm_rows.LayoutUnavailable, match="no C compiler"):
            libslurm_rows.layout(header)
        return
    with pytest.raises(libslurm_rows.LayoutUnavailable, match="could not build the layout"):
        libslurm_rows.layout(header)
    assert not list((tmp_path / "cache").glob("slurm-layout-*.json"))


def test_no_compiler_is_said(tmp_path, monkeypatch):
    header = tmp_path / "include" / "slurm" / "slurm.h"
    header.parent.mkdir(parents=True)
    header.write_text("/* any */\n")
    monkeypatch.setenv("MALLEO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(libslurm_rows.LayoutUnavailable, match="no C compiler"):
        libslurm_rows.layout(header)


@pytest.fixture
def fake_header(tmp_path, monkeypatch):
    if libslurm_rows.shutil.which("cc") is None and libslurm_rows.shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    header = tmp_path / "include" / "slurm" / "slurm.h"
    header.parent.mkdir(parents=True)
    header.write_text(stand_in_header())
    monkeypatch.setenv("MALLEO_CACHE_DIR", str(tmp_path / "cache"))
    return header


def test_the_layout_is_read_from_the_header_and_cached(fake_header, tmp_path):
    lay = libslurm_rows.layout(fake_header)
    assert lay["node_info_t.cpus"] == (12, 2) and lay["node_info_t.partitions"] == (16, 8)
    cached = list((tmp_path / "cache").glob("slurm-layout-*.json"))
    assert len(cached) == 1 and (cached[0].stat().st_mode & 0o777) == 0o600
    assert libslurm_rows.layout(fake_header) == lay


def test_a_damaged_or_linked_cache_is_rebuilt_not_trusted(fake_header, tmp_path):
    """The offsets address memory: a cache entry that is not a layout (a field outside its
    struct, a missing field) or a symbolic link is ignored and the header compiled again."""
    lay = libslurm_rows.layout(fake_header)
    cached = next((tmp_path / "cache").glob("slurm-layout-*.json"))
    damaged = dict(lay, **{"node_info_t.cpus": (4096, 2)})
    cached.write_text(libslurm_rows.json.dumps(damaged))
    assert libslurm_rows.layout(fake_header) == lay
    cached.write_text('{"node_info_t.cpus": [8, 2]}')
    assert libslurm_rows.layout(fake_header) == lay
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(libslurm_rows.json.dumps(damaged))
    cached.unlink()
    cached.symlink_to(elsewhere)
    assert libslurm_rows.layout(fake_header) == lay
    assert not cached.is_symlink()
    assert libslurm_rows.json.loads(elsewhere.read_text())["node_info_t.cpus"] == [4096, 2]


def test_a_cache_directory_others_may_write_is_not_used(fake_header, tmp_path, monkeypatch):
    """MALLEO_CACHE_DIR=/var/tmp (world-writable, where build-slurm.sh keeps its prefixes):
    the layout is compiled and used, but neither read from nor written there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("MALLEO_CACHE_DIR", str(shared))
    lay = libslurm_rows.layout(fake_header)
    assert lay["node_info_t.cpus"] == (12, 2)
    assert list(shared.iterdir()) == []
