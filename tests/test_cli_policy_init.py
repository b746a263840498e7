"""``malleo policy init -o FILE`` where FILE's folder is missing, a link, or not a folder:
the folder is created (mode 0755) or the command fails with one line and exit status 2."""
import os
import stat

from cli_runner import MalleoRunner

from malleo.emulator.cli import cli


def run(*args, code=0):
    result = MalleoRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result


def test_init_creates_the_missing_folders_with_mode_0755(tmp_path):
    old = os.umask(0o077)  # a strict umask must not leave /etc/malleo unreadable to others
    try:
        target = tmp_path / "etc" / "malleo" / "policy.toml"
        result = run("policy", "init", "-o", str(target))
    finally:
        os.umask(old)
    assert target.read_text().startswith("# malleo policy file")
    for folder in (tmp_path / "etc", tmp_path / "etc" / "malleo"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert f"created {tmp_path / 'etc'}/ (mode 0755)" in result.stderr
    assert f"wrote {target}" in result.stderr


def test_init_refuses_to_write_through_a_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = tmp_path / "policy.toml"
    link.symlink_to(victim)
    err = run("policy", "init", "-o", str(link), "--force", code=2).stderr
    assert err == f"malleo: error: -o/--output: {link} is a symbolic link; write to its target instead\n"
    assert victim.read_text() == "keep\n"


def test_init_under_a_file_or_a_dangling_link_fails_cleanly(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("")
    err = run("policy", "init", "-o", str(plain / "sub" / "p.toml"), code=2).stderr
    assert err == f"malleo: error: -o/--output: {plain} is not a folder\n"
    dangling = tmp_path / "gone"
    dangling.symlink_to(tmp_path / "nowhere")
    err = run("policy", "init", "-o", str(dangling / "p.toml"), code=2).stderr
    assert f"{dangling} is a symbolic link to nothing" in err
    assert not (tmp_path / "nowhere").exists()


def test_init_in_an_unwritable_folder_fails_cleanly(tmp_path):
    if os.geteuid() == 0:  # root writes anywhere: use a folder that cannot hold files
        err = run("policy", "init", "-o", "/proc/malleo-test/p.toml", code=2).stderr
        assert err.startswith("malleo: error: -o/--output: cannot create the folder /proc/malleo-test")
        return
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    err = run("policy", "init", "-o", str(locked / "sub" / "p.toml"), code=2).stderr
    assert err.startswith(f"malleo: error: -o/--output: cannot create the folder {locked / 'sub'}")
