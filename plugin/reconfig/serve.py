"""Run the reconfiguration endpoint in the foreground until SIGINT/SIGTERM."""
from __future__ import annotations

import logging
import signal
import threading

from malleo.plugin.backends.cli import CliBackend
from malleo.plugin.reconfig.server import Endpoint


def serve_forever(socket_path: str, *, slurm_conf: str | None = None, policy=None,
                  **limits) -> None:
    """Serve on ``socket_path`` (CLI backend on ``slurm_conf``) until a signal arrives.

    ``limits`` are :class:`~malleo.plugin.reconfig.server.Endpoint`'s keyword arguments
    (``timeout``, ``max_connections``, ``max_per_uid``, ``workers``, ``backlog``).
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    with Endpoint(socket_path, CliBackend(conf=slurm_conf), policy=policy, **limits):
        done.wait()
