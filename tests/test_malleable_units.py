"""The malleable client library without Slurm: the job declaration, block distribution,
protocol lines, and check()/restore() on one rank (mpi4py's COMM_SELF)."""
import json
import socket
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import EXAMPLES
from malleo.plugin.malleable import blocks, protocol, spec


def test_spec_round_trip_and_absence():
    m = spec.DeclaredMalleability(1, 8, 30)
    assert m.comment() == "malleo:min=1,max=8,period=30"
    assert spec.parse(m.comment()) == m
    assert spec.parse(None) is None and spec.parse("") is None
    assert spec.parse("my own comment") is None


@pytest.mark.parametrize("comment, word", [
    ("malleo:min=1,max=8", "missing period"),
    ("malleo:min=3,max=2,period=5", "1 <= min <= max"),
    ("malleo:min=0,max=2,period=5", "1 <= min <= max"),
    ("malleo:min=1,max=2,period=0", "period must be"),
    ("malleo:min=1,max=2,period=5,min=1", "given twice"),
    ("malleo:min=1,max=x,period=5", "not a whole number"),
    ("malleo:min=1,max=2,period=5,cores=4", "not min="),
    ("malleo:min=-1,max=2,period=5", "not a whole number"),
])
def test_spec_refuses_bad_comments(comment, word):
    with pytest.raises(spec.SpecError, match=word):
        spec.parse(comment)


@settings(max_examples=EXAMPLES, deadline=None)
@given(n=st.integers(0, 500), size=st.integers(1, 40))
def test_blocks_partition_rows(n, size):
    c = blocks.counts(n, size)
    assert sum(c) == n and max(c) - min(c) <= 1
    ranges = [blocks.row_range(n, size, r) for r in range(size)]
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))


def test_read_line_limits():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b'{"x":1}\nrest')
        assert protocol.read_line(b, 100) == b'{"x":1}'
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"x" * 200)
        with pytest.raises(ValueError, match="longer than 100"):
            protocol.read_line(b, 100)
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"no newline")
        a.close()
        with pytest.raises(ValueError, match="closed"):
            protocol.read_line(b, 100)


def _mpi():
    return pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed (pip install mpi4py)")


def test_check_outside_launcher_is_none(monkeypatch):
    MPI = _mpi()
    from malleo.plugin import malleable
    monkeypatch.delenv("MALLEO_STATE_DIR", raising=False)
    state = malleable.State({"u": np.zeros((4, 4))}, {"u": (4, 4)}, {"iteration": 3})
    assert malleable.check(MPI.COMM_SELF, state, period=0) == malleable.Action("none", 0)
    assert malleable.restore(MPI.COMM_SELF) is None


def test_check_asks_at_most_once_per_period(monkeypatch, tmp_path):
    """Rate limit: with a long period only the first call past it reaches the endpoint."""
    MPI = _mpi()
    from malleo.plugin import malleable
    from malleo.plugin.malleable import client
    asked = []
    monkeypatch.setenv("MALLEO_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(client, "_ask_agent", lambda: asked.append(1) or client.Action("none", 2))
    monkeypatch.setattr(client._Clock, "last_ask", time.monotonic() - 7200)
    state = malleable.State()
    for _ in range(50):
        assert not malleable.check(MPI.COMM_SELF, state, period=3600).is_resize
    assert len(asked) == 1


def test_resize_answer_checkpoints_and_restore_hands_it_back(monkeypatch, tmp_path):
    MPI = _mpi()
    from malleo.plugin import malleable
    from malleo.plugin.malleable import client
    monkeypatch.setenv("MALLEO_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(client, "_ask_agent", lambda: client.Action("expand", 4))
    monkeypatch.setattr(client._Clock, "last_ask", time.monotonic() - 7200)
    grid = np.arange(30.0).reshape(6, 5)
    state = malleable.State({"u": grid}, {"u": (6, 5)}, {"iteration": 17})
    action = malleable.check(MPI.COMM_SELF, state, period=0)
    assert action == malleable.Action("expand", 4) and action.is_resize
    assert json.loads((tmp_path / client.REQUEST).read_text()) == {"action": "expand", "nodes": 4}
    back = malleable.restore(MPI.COMM_SELF)
    assert back.values == {"iteration": 17} and back.shapes == {"u": (6, 5)}
    assert np.array_equal(back.arrays["u"], grid)


def test_refusal_and_unreachable_endpoint_mean_none(monkeypatch, tmp_path, capfd):
    """A job whose agent is down or refuses keeps running at its size, and the action says
    there was no answer (never a silent "no change")."""
    from malleo.plugin.malleable import client
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("MALLEO_NODES", "2")
    monkeypatch.setenv(protocol.SOCKET_ENV, str(tmp_path / "absent.sock"))
    action = client._ask_agent()
    assert (action.kind, action.nodes) == ("none", 2) and not action.is_answer
    assert "No such file or directory" in action.error
    assert "going on at 2 nodes" in capfd.readouterr().err


def test_resize_commands_leave_nothing_in_the_working_directory(tmp_path, monkeypatch):
    """scontrol update NumNodes= writes slurm_job_<id>_resize.sh/.csh into its working
    directory: the CLI backend runs it in a private one, removed afterwards."""
    from malleo.plugin.backends.cli import CliBackend

    monkeypatch.chdir(tmp_path)
    argv = ["sh", "-c", "touch slurm_job_7_resize.sh slurm_job_7_resize.csh; pwd"]
    scratch = CliBackend()._run(argv, in_scratch=True).strip()
    assert scratch != str(tmp_path) and list(tmp_path.iterdir()) == []
    assert not __import__("os").path.exists(scratch)


def test_node_counts_read_in_the_singular_and_plural():
    from malleo.plugin.malleable.slurm_resize import nodes_text

    assert [nodes_text(n) for n in (0, 1, 2)] == ["0 nodes", "1 node", "2 nodes"]


class _Ranks:
    """A communicator's rank and size only (wait_for_ranks sends no MPI message)."""

    def __init__(self, rank: int, size: int):
        self.rank, self.size = rank, size


def test_wait_for_ranks_holds_until_every_rank_started(monkeypatch, tmp_path, capfd):
    """Each rank marks its start-up in the state directory and waits for all of them, per
    step; a rank that never arrives ends the wait at the timeout, said on stderr."""
    from malleo.plugin.malleable import client, launch
    monkeypatch.setenv("MALLEO_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("MALLEO_STEP", "3")
    began = time.monotonic()
    assert client.wait_for_ranks(_Ranks(0, 2), timeout=0.3) is False
    assert time.monotonic() - began >= 0.3
    assert "not every rank started within 0.3 s" in capfd.readouterr().err
    assert client.wait_for_ranks(_Ranks(1, 2), timeout=5) is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready-3-0", "ready-3-1"]
    monkeypatch.setenv("MALLEO_STEP", "4")           # the next step waits afresh
    assert client.wait_for_ranks(_Ranks(0, 2), timeout=0.1) is False
    launch._remove_state_files(tmp_path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.delenv("MALLEO_STATE_DIR")
    assert client.wait_for_ranks(_Ranks(0, 2), timeout=5) is False   # outside the launcher
