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
    (``timeout``, ``max_connections``, ``max_per_uid``, ``workers``, ``backlog``).  Logs go
    through the ``malleo`` logger (:func:`malleo.plugin.agent.logs.configure`, set up here in
    text format when the caller did not); the stop is logged with the signal.
    """
    from malleo.plugin.agent.logs import ROOT_LOGGER, configure

    if not logging.getLogger(ROOT_LOGGER).handlers:
        configure("text")
    log = logging.getLogger("malleo.reconfig")
    done = threading.Event()
    received = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: (received.append(signum), done.set()))
    with Endpoint(socket_path, CliBackend(conf=slurm_conf), policy=policy, **limits):
        done.wait()
    name = signal.Signals(received[0]).name if received else "stop"
    log.info("reconfig endpoint stopped on %s (socket %s removed)", name, socket_path)
