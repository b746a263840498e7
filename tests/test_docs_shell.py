"""The shell blocks of the sysadmin guides run as written (issue 17, "done when").

Every fenced ``sh`` (or ``bash``) block of docs/sysadmins.md and docs/agent.md is run, in
document order, one ``bash -e`` per block, from the checkout's root, as the user running the
tests (root in ``make test``), against the session's local Slurm (``SLURM_CONF``), with the
``malleo`` of this environment first on PATH.  Two things are moved so the machine's own
stay untouched: ``/etc/malleo`` and ``/run/malleo`` become folders of a temporary
directory (:data:`MOVED`), and ``HOME`` is a temporary folder.

A block that cannot run in a test carries a mark on the line before it:

- ``<!-- doc-test: skip: REASON -->``: not run (it installs packages, needs systemd, ...);
  :data:`MAX_SKIPPED` bounds how many there are;
- ``<!-- doc-test: stop-after: SECONDS -->``: a command that runs until stopped (the agent):
  it must still run after SECONDS, then SIGTERM must end it with exit status 0.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDES = ("docs/sysadmins.md", "docs/agent.md")
MOVED = ("/etc/malleo", "/run/malleo")
"""Paths the blocks use that the test moves into its temporary directory."""
MAX_SKIPPED = 3
"""Blocks marked ``skip`` across both guides; more means the guides stopped being runnable."""
BLOCK_SECONDS = 180
"""Time limit of one block (bringing up and down a local Slurm takes about 10 s)."""

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
_MARK = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<kind>skip|stop-after):\s*(?P<arg>.*?)\s*-->\s*$")


@dataclass
class Block:
    """One fenced shell block: where it starts (1-based line of its fence), its text with
    the fence's indentation removed, and its mark (``kind``, ``arg``) if any."""

    path: str
    line: int
    text: str
    kind: str | None = None
    arg: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def shell_blocks(path: str, text: str) -> list[Block]:
    """The ``sh``/``bash`` blocks of a Markdown text, with their marks.

    Raises:
        ValueError: a mark not directly followed by a shell block, a ``stop-after``
            without a whole number of seconds, or an unclosed fence (``PATH:LINE: ...``).
    """
    blocks: list[Block] = []
    lines = text.splitlines()
    mark: tuple[int, str, str] | None = None
    k = 0
    while k < len(lines):
        found = _MARK.match(lines[k])
        if found:
            mark = (k + 1, found["kind"], found["arg"])
            if found["kind"] == "stop-after" and not found["arg"].isdigit():
                raise ValueError(f"{path}:{k + 1}: stop-after needs whole seconds, "
                                 f"got {found['arg']!r}")
            if found["kind"] == "skip" and not found["arg"]:
                raise ValueError(f"{path}:{k + 1}: skip needs a reason")
            k += 1
            continue
        fence = _FENCE.match(lines[k])
        if fence is None:
            if lines[k].strip() and mark is not None:
                raise ValueError(f"{path}:{mark[0]}: doc-test mark not followed by a block")
            k += 1
            continue
        end = k + 1
        while end < len(lines) and not _FENCE.match(lines[end]):
            end += 1
        if end == len(lines):
            raise ValueError(f"{path}:{k + 1}: unclosed fence")
        if fence["lang"] in ("sh", "bash"):
            indent = len(fence["indent"])
            body = "\n".join(line[indent:] for line in lines[k + 1:end])
            blocks.append(Block(path, k + 1, body + "\n", *(mark[1:] if mark else (None, ""))))
        elif mark is not None:
            raise ValueError(f"{path}:{mark[0]}: doc-test mark before a "
                             f"{fence['lang'] or 'plain'} block (only sh blocks run)")
        mark = None
        k = end + 1
    if mark is not None:
        raise ValueError(f"{path}:{mark[0]}: doc-test mark not followed by a block")
    return blocks


def guide_blocks(path: str) -> list[Block]:
    return shell_blocks(path, (REPO / path).read_text())


# ------------------------------------------------------------ the parser and the marks

def test_shell_blocks_reads_fences_marks_and_indentation():
    text = ("intro\n\n```sh\necho one\n```\n\n1. a step\n\n   <!-- doc-test: stop-after: 5 -->\n"
            "   ```sh\n   malleo slurm agent\n   ```\n\n```\n$ not run\n```\n"
            "<!-- doc-test: skip: needs systemd -->\n```bash\nsystemctl start x\n```\n")
    blocks = shell_blocks("g.md", text)
    assert [(b.line, b.text, b.kind, b.arg) for b in blocks] == [
        (3, "echo one\n", None, ""), (10, "malleo slurm agent\n", "stop-after", "5"),
        (18, "systemctl start x\n", "skip", "needs systemd")]


@pytest.mark.parametrize("text, message", [
    ("<!-- doc-test: skip: x -->\ntext\n```sh\nls\n```\n", "g.md:1: doc-test mark not followed"),
    ("<!-- doc-test: skip: x -->\n```\nls\n```\n", "g.md:1: doc-test mark before a plain"),
    ("<!-- doc-test: stop-after: soon -->\n```sh\nls\n```\n", "g.md:1: stop-after needs"),
    ("<!-- doc-test: skip: -->\n```sh\nls\n```\n", "g.md:1: skip needs a reason"),
    ("```sh\nls\n", "g.md:1: unclosed fence"),
])
def test_shell_blocks_refuses_a_misplaced_or_bad_mark(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        shell_blocks("g.md", text)


def test_the_guides_skip_few_blocks_and_each_says_why():
    blocks = [b for path in GUIDES for b in guide_blocks(path)]
    skipped = [b for b in blocks if b.kind == "skip"]
    assert len(blocks) >= 8, "the guides lost their runnable walk-through"
    assert len(skipped) <= MAX_SKIPPED, [b.where for b in skipped]
    assert all(len(b.arg) > 10 for b in skipped), [b.where for b in skipped]
    # the first hour's commands are in both guides
    for command in ("malleo policy init -o /etc/malleo/policy.toml",
                    "malleo slurm agent --config /etc/malleo/policy.toml --dry-run"):
        for path in GUIDES:
            assert any(command in b.text for b in guide_blocks(path)), (path, command)


# ------------------------------------------------------------ running them on the live Slurm

def _moved(text: str, root: Path) -> str:
    for path in MOVED:
        text = text.replace(path, str(root) + path)
    return text


def _environment(root: Path, conf: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(root / "home"), SLURM_CONF=conf,
               MALLEO_STATE_DIR=str(root / "run/malleo"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    env.pop("MALLEO_POLICY", None)
    (root / "home").mkdir(parents=True, exist_ok=True)
    return env


def _run_until_stopped(block: Block, script: str, env: dict[str, str]) -> None:
    command = script.strip()
    assert "\n" not in command, f"{block.where}: a stop-after block holds one command"
    proc = subprocess.Popen(["bash", "-ec", "exec " + command], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=int(block.arg))
        pytest.fail(f"{block.where}: ended by itself (exit {proc.returncode}) before "
                    f"{block.arg} s:\n{out}")
    except subprocess.TimeoutExpired:
        pass
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{block.where}: still running 60 s after SIGTERM:\n{out}")
    assert proc.returncode == 0, f"{block.where}: exit {proc.returncode} on SIGTERM:\n{out}"


def _down_leftover_clusters(home: Path) -> None:
    """A block that failed between ``local-slurm.sh up`` and ``down`` leaves its daemons:
    stop every cluster folder under the test's HOME."""
    for marker in home.glob("**/.malleo-local-slurm"):
        subprocess.run(["bash", str(REPO / "slurm-docker/local-slurm.sh"), "down", "--dir",
                        str(marker.parent)], capture_output=True, timeout=120)


@pytest.mark.slurm
@pytest.mark.parametrize("path", GUIDES)
def test_every_shell_block_runs_as_written(path, slurm_cluster, tmp_path):
    env = _environment(tmp_path, slurm_cluster.conf)
    try:
        for block in guide_blocks(path):
            if block.kind == "skip":
                continue
            script = _moved(block.text, tmp_path)
            if block.kind == "stop-after":
                _run_until_stopped(block, script, env)
                continue
            proc = subprocess.run(["bash", "-e", "-c", script], cwd=REPO, env=env,
                                  capture_output=True, text=True, timeout=BLOCK_SECONDS)
            assert proc.returncode == 0, (
                f"{block.where}: exit {proc.returncode}\n--- block\n{block.text}--- stdout\n"
                f"{proc.stdout[-3000:]}--- stderr\n{proc.stderr[-3000:]}")
            assert "Traceback" not in proc.stderr, f"{block.where}:\n{proc.stderr}"
    finally:
        _down_leftover_clusters(tmp_path / "home")
