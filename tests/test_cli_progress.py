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
