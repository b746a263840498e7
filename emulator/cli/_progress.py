"""A spinner with elapsed seconds on stderr while a long step runs (only on a terminal)."""
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
