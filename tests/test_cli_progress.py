"""Progress of long commands: a bar on a terminal only, nothing in logs and pipes or with
--quiet, and a readable end summary (issue 17.9)."""
import pandas as pd

from malleo.emulator.cli._progress import Bar
from malleo.plugin.cli.slurm import replay_summary


class _Terminal:
    """A stderr stand-in that claims to be a terminal (or not) and records what is written."""

    def __init__(self, is_tty=True):
        self.text = ""
        self.is_tty = is_tty

    def isatty(self):
        return self.is_tty

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_bar_draws_in_place_on_a_terminal_and_erases_itself():
    terminal = _Terminal()
    with Bar(40, "jobs finished", stream=terminal) as bar:
        bar.update(10, "running 5", force=True)
        bar.update(11)                      # within 0.1 s of the last draw: skipped
        bar.update(40, force=True)
    frames = terminal.text.split("\r\x1b[K")
    assert frames[0] == "" and frames[-1] == ""
    assert frames[1].startswith("[######------------------] 10/40 jobs finished  running 5  0:0")
    assert frames[2].startswith("[########################] 40/40 jobs finished  0:0")
    assert len(frames) == 4


def test_bar_is_silent_off_a_terminal_or_when_disabled():
    for stream, enabled in ((_Terminal(is_tty=False), True), (_Terminal(), False)):
        with Bar(3, "jobs submitted", enabled=enabled, stream=stream) as bar:
            for k in range(1, 4):
                bar.update(k, force=True)
        assert stream.text == ""


def test_bar_line_shows_minutes_and_handles_an_empty_total():
    assert Bar(4, "x", stream=_Terminal()).line(1, "", 67.9).endswith("1/4 x  1:07")
    assert Bar(0, "x", stream=_Terminal()).line(0, "", 0).startswith("[" + "#" * Bar.WIDTH + "]")


def test_slurm_replay_summary_reads_as_sentences():
    observed = pd.DataFrame({
        "job_number": [1, 2, 3], "submit": [100, 101, 103], "start": [100, 110, -1],
        "end": [160, 170, -1], "wait": [0, 9, -1],
        "state": ["COMPLETED", "COMPLETED", "CANCELLED"]})
    diff = {"inversions": [(2, 3)], "backfilled_observed": [3], "backfilled_expected": [],
            "not_started": [3]}
    assert replay_summary(observed, "obs.csv", diff).splitlines() == [
        "wrote obs.csv: 2 of 3 jobs completed, 1 cancelled",
        "  wait mean 4.5 s, max 9 s; makespan 70 s (scaled time)",
        "  against the emulator: 1 start-order inversion(s); backfilled 1 by Slurm, 0 planned;"
        " 1 never started"]


# ----------------------------------------- the core's progress callback and the replay bar

def _default_columns(count=3000):
    import numpy as np

    from malleo.emulator.driver import load_workload

    table = load_workload(None).table.head(count)
    return [np.ascontiguousarray(table[c].to_numpy(), dtype=d) for c, d in (
        ("submit_time", np.int64), ("runtime", np.int64), ("estimate", np.int64),
        ("procs", np.int32), ("user_id", np.int32), ("queue", np.int32),
        ("partition", np.int32))]


def test_simulate_calls_progress_in_chunks_and_schedules_the_same():
    from malleo._core import simulate
    from malleo.policy import Policy

    columns = _default_columns()
    n = len(columns[0])
    for backfill in ("easy", "conservative"):
        policy = Policy(backfill=backfill)
        calls = []
        with_progress = simulate(*columns, 256, policy, progress=lambda *a: calls.append(a),
                                 progress_events=100)
        plain = simulate(*columns, 256, policy)
        for key in plain:
            assert (with_progress[key] == plain[key]).all(), (backfill, key)
        assert len(calls) > n // 100 // 2           # event times >= arrival times / 2
        ended = [c[0] for c in calls]
        now = [c[2] for c in calls]
        assert ended == sorted(ended) and now == sorted(now)
        assert calls[-1][:2] == (n, n) and all(c[1] == n for c in calls)
        assert calls[-1][2] == int(plain["end"].max())


def test_a_progress_callback_can_stop_a_replay():
    import pytest

    from malleo._core import simulate
    from malleo.policy import Policy

    columns = _default_columns()

    def interrupt(ended, n, now):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simulate(*columns, 256, Policy(), progress=interrupt, progress_events=10)
    with pytest.raises(ValueError, match="progress_events"):
        simulate(*columns, 256, Policy(), progress=interrupt, progress_events=0)
    assert len(simulate(*columns, 256, Policy())["start"]) == len(columns[0])


def test_malleable_replay_reports_progress_and_schedules_the_same():
    from malleo.emulator.driver import load_workload, replay
    from malleo.flexible import FlexibleJobs
    from malleo.policy import Policy

    workload = load_workload(None)
    policy, half = Policy(), FlexibleJobs(fraction=0.5)
    calls = []
    counted = replay(workload, policy, jobs="0:2000", flexible=half,
                     progress=lambda *a: calls.append(a))
    plain = replay(workload, policy, jobs="0:2000", flexible=half)
    assert "n_expand" in counted.jobs.columns              # the malleable loop ran
    assert counted.jobs.equals(plain.jobs)
    assert calls[-1][:2] == (2000, 2000)
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)


def test_progress_line_shows_the_bar_and_the_simulated_day():
    from malleo.emulator.cli._progress import Progress

    progress = Progress(stream=_Terminal())
    progress.step("replaying under fcfs+easy")
    counter = progress.replay_counter(origin=1000)
    counter(2500, 10000, 1000 + 3 * 86400 + 5)
    assert progress.line(1.25) == ("replaying under fcfs+easy  [#####---------------] "
                                   "2,500/10,000 jobs ended  simulated day 4  1.2 s")
    progress.step("writing out.csv")
    assert progress.line(2.0) == "writing out.csv  2.0 s"
    assert Progress(stream=_Terminal(is_tty=False)).replay_counter() is None
    assert Progress(enabled=False, stream=_Terminal()).replay_counter() is None


def _terminal_stderr(monkeypatch, is_tty=True):
    from malleo.emulator.cli import _progress

    terminal = _Terminal(is_tty)
    monkeypatch.setattr(_progress, "_stderr", lambda: terminal)
    return terminal


def test_replay_and_compare_end_with_a_summary_on_a_terminal_only(monkeypatch, malleo_cli):
    plain = malleo_cli("replay", "--jobs", "0:2000")
    terminal = _terminal_stderr(monkeypatch)
    shown = malleo_cli("replay", "--jobs", "0:2000")
    assert shown.exit_code == 0 and shown.stdout == plain.stdout
    last = terminal.text.split("\r\x1b[K")[-1]
    assert last.startswith("replayed 2,000 jobs under fcfs+easy in ") and \
        last.endswith(" days simulated)\n"), terminal.text

    terminal = _terminal_stderr(monkeypatch)
    assert malleo_cli("compare", "--jobs", "0:1000", "--policy", "fcfs+easy", "--policy",
                      "sjf+easy").exit_code == 0
    assert terminal.text.split("\r\x1b[K")[-1].startswith(
        "replayed 1,000 jobs under 2 policies in ")

    for args, is_tty in ((("--quiet",), True), ((), False)):
        terminal = _terminal_stderr(monkeypatch, is_tty)
        result = malleo_cli("replay", "--jobs", "0:2000", *args)
        assert result.stdout == plain.stdout and terminal.text == "", args


def test_tune_bar_ends_with_the_time_taken():
    from malleo.emulator.tune.objective import parse_objective
    from malleo.emulator.tune.runner import TrialBar

    terminal = _Terminal()
    bar = TrialBar(parse_objective("bsld"), stream=terminal)
    bar({"trial": 1, "status": "ok", "train_bsld_mean": 2.0}, 1, 2)
    bar({"trial": 2, "status": "ok", "train_bsld_mean": 1.5}, 2, 2)
    first, last = terminal.text.split("\r\x1b[K")[1:]
    assert "1/2 trials" in first and "ETA" in first and "done in" not in first
    assert "2/2 trials  best 1.5  done in " in last and last.endswith(" s\n")
