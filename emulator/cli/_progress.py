"""Progress on stderr, only on a terminal: a spinner with elapsed seconds while a step runs
(:class:`Progress`) and a bar of counted work (:class:`Bar`)."""
from __future__ import annotations

import sys
import threading
import time

_FRAMES = "|/-\\"


class Progress:
    """``with Progress(enabled) as p: p.step("reading trace"); ...`` shows
    ``| reading trace  1.2 s`` on stderr, redrawn every 0.1 s, erased on exit.

    Disabled (does nothing) unless ``enabled`` and stderr is a terminal.
    """

    def __init__(self, enabled: bool = True, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.is_active = bool(enabled) and self.stream.isatty()
        self._label = ""
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self, label: str) -> None:
        """Name what runs now."""
        self._label = label

    def __enter__(self) -> "Progress":
        if self.is_active:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def _run(self) -> None:
        frame = 0
        while not self._stop.wait(0.1):
            elapsed = time.monotonic() - self._started
            self.stream.write(f"\r\x1b[K{_FRAMES[frame % 4]} {self._label}  {elapsed:.1f} s")
            self.stream.flush()
            frame += 1


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
