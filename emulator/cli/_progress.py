"""Progress on stderr, only on a terminal: a spinner with elapsed seconds while a step runs,
with a bar once the step counts its work (:class:`Progress`), and a bar of counted work
(:class:`Bar`).  Off a terminal, or disabled by ``--quiet``, both write nothing."""
from __future__ import annotations

import sys
import threading
import time

_FRAMES = "|/-\\"


def _stderr():
    """Where progress goes by default: the current ``sys.stderr`` (tests put a terminal
    stand-in here)."""
    return sys.stderr


class Progress:
    """``with Progress(enabled) as p: p.step("reading trace"); ...`` shows
    ``| reading trace  1.2 s`` on stderr, redrawn every 0.1 s by a thread, erased on exit.

    A step that counts its work (a replay: ``progress=p.replay_counter()``) adds a bar,
    ``| replaying fcfs+easy  [######------] 4,000/10,000 jobs ended  day 12  1.2 s``.
    Disabled (does nothing) unless ``enabled`` and stderr is a terminal.
    """

    WIDTH = 20
    """Characters between the bar's brackets."""

    def __init__(self, enabled: bool = True, stream=None) -> None:
        self.stream = stream or _stderr()
        self.is_active = bool(enabled) and self.stream.isatty()
        self._label = ""
        self._count: tuple[int, int, str] | None = None
        self._summary: str | None = None
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self, label: str) -> None:
        """Name what runs now (and drop the previous step's count)."""
        self._label = label
        self._count = None

    def count(self, done: int, total: int, note: str = "") -> None:
        """Set the current step's count: ``done`` of ``total`` jobs ended, and a note."""
        self._count = (done, total, note)

    def replay_counter(self, origin: int = 0):
        """A replay's progress callback (``malleo.emulator.driver.replay(progress=...)``):
        it sets the count, with the simulated day reached since ``origin`` (seconds), or
        None when inactive (the core then runs without returning to Python)."""
        if not self.is_active:
            return None

        def counter(ended: int, n: int, now: int) -> None:
            self.count(ended, n, f"simulated day {max(now - origin, 0) // 86400 + 1:,}")
        return counter

    def line(self, elapsed: float) -> str:
        """The text drawn now (no control characters)."""
        text = f"{self._label}  "
        if self._count is not None:
            done, total, note = self._count
            filled = self.WIDTH * min(done, total) // total if total else self.WIDTH
            text += (f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {done:,}/{total:,} "
                     f"jobs ended  " + (f"{note}  " if note else ""))
        return text + f"{elapsed:.1f} s"

    def finish(self, summary: str) -> None:
        """On a terminal, replace the progress line by ``summary`` (kept on screen)."""
        if self.is_active:
            self._summary = summary

    @property
    def elapsed(self) -> float:
        """Seconds since the progress started."""
        return time.monotonic() - self._started

    def __enter__(self) -> "Progress":
        if self.is_active:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            summary = self._summary if exc_type is None else None
            self.stream.write("\r\x1b[K" + (summary + "\n" if summary else ""))
            self.stream.flush()

    def _run(self) -> None:
        frame = 0
        while not self._stop.wait(0.1):
            elapsed = time.monotonic() - self._started
            self.stream.write(f"\r\x1b[K{_FRAMES[frame % 4]} {self.line(elapsed)}")
            self.stream.flush()
            frame += 1


def span_days(jobs) -> str:
    """``"12.5 days"``: a replayed job table's span, first submit to last end (``jobs``: a
    job table, or a dict holding its ``submit`` and ``end`` columns)."""
    submit, end = jobs["submit"], jobs["end"]
    if not len(submit):
        return "0 days"
    span = int(end.max()) - int(submit.min())
    return f"{span / 86400:,.1f} days"


class Bar:
    """A progress bar on stderr: ``[#########-----------] 12/40 jobs finished  running 5  1:07``.

    Drawn in place, at most ten times a second, only when ``enabled`` and the stream is a
    terminal; otherwise it writes nothing (logs and pipes get the caller's end summary
    only). ``update(done, note)`` sets the count (``done`` of ``total``, a ``unit`` such as
    ``"jobs submitted"``) and a short note; ``close()`` erases the line.
    """

    WIDTH = 24
    """Characters between the brackets."""

    def __init__(self, total: int, unit: str, enabled: bool = True, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.is_active = bool(enabled) and self.stream.isatty()
        self.total = max(int(total), 0)
        self.unit = unit
        self._started = time.monotonic()
        self._drawn = 0.0

    def update(self, done: int, note: str = "", *, force: bool = False) -> None:
        """Show ``done`` of ``total`` with ``note``; redrawn at most every 0.1 s unless
        ``force`` (the last update of a phase)."""
        if not self.is_active:
            return
        now = time.monotonic()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        self.stream.write("\r\x1b[K" + self.line(done, note, now - self._started))
        self.stream.flush()

    def line(self, done: int, note: str, elapsed: float) -> str:
        """The bar's text for ``done`` after ``elapsed`` seconds (no control characters)."""
        filled = self.WIDTH * min(done, self.total) // self.total if self.total else self.WIDTH
        minutes, seconds = divmod(int(elapsed), 60)
        return (f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {done}/{self.total} {self.unit}"
                + (f"  {note}" if note else "") + f"  {minutes}:{seconds:02d}")

    def close(self) -> None:
        """Erase the bar (the caller prints its summary after)."""
        if self.is_active:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
