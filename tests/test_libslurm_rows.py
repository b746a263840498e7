"""The pyslurm backend's column reader where it cannot work (plugin/backends/libslurm_rows.py):
no header, or a header the layout program cannot build against, is a LayoutUnavailable
naming what is missing, so the backend falls back to pyslurm's objects with the reason.
Its reads themselves are checked live on Slurm 25.11 against the CLI backend's
(tests/test_slurm_backends_equal.py)."""
import pytest

from malleo.plugin.backends import libslurm_rows


def test_no_header_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv("MALLEO_SLURM_INCLUDE", raising=False)
    lib = tmp_path / "prefix" / "lib" / "libslurm.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    if (libslurm_rows.Path("/usr/include/slurm/slurm.h")).is_file():
        pytest.skip("this machine has /usr/include/slurm/slurm.h (libslurm-dev)")
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
