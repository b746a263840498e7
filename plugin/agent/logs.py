"""Structured logs: one event name plus key=value fields per line, one setup for every
long-running command (``malleo slurm agent``, ``malleo slurm reconfig``).

``--log-format json`` writes one JSON object per line (``ts``, ``level``, ``event`` and the
fields), for journald/Loki/Elasticsearch; ``text`` writes
``2026-11-30T03:00:00.000Z INFO cycle pending=12 ...``.  Both go to stderr, timestamps in
UTC with the zone written (``Z``).  :func:`configure` sets up the ``malleo`` logger, parent of
``malleo.agent`` and ``malleo.reconfig``; ``--log-level debug`` also shows idle cycles.
"""
from __future__ import annotations

import json
import logging
import sys
import time

LOGGER_NAME = "malleo.agent"
ROOT_LOGGER = "malleo"
FORMATS = ("json", "text")
LEVELS = ("debug", "info", "warning", "error")


def event(logger: logging.Logger, level: int, name: str, **fields) -> None:
    """Log event ``name`` with ``fields`` (JSON-serialisable values)."""
    logger.log(level, name, extra={"malleo_fields": fields})


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + \
        f".{int(record.msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``{"ts", "level", "event", **fields}``."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {"ts": _timestamp(record), "level": record.levelname, "event": record.getMessage()}
        doc.update(getattr(record, "malleo_fields", {}) or {})
        if record.exc_info:
            doc["traceback"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """``TS LEVEL event key=value ...`` (values with spaces are quoted)."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), record.levelname, record.getMessage()]
        for key, value in (getattr(record, "malleo_fields", {}) or {}).items():
            text = json.dumps(value, default=str) if not isinstance(value, str) else value
            if isinstance(value, str) and (" " in value or not value):
                text = json.dumps(value)
            parts.append(f"{key}={text}")
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(fmt: str = "text", level: int | str = logging.INFO,
              stream=None) -> logging.Logger:
    """Route the ``malleo`` loggers to ``stream`` (default stderr) in format ``fmt`` at
    ``level`` (an int or one of :data:`LEVELS`)."""
    if fmt not in FORMATS:
        raise ValueError(f"log format: must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if isinstance(level, str):
        if level.lower() not in LEVELS:
            raise ValueError(f"log level: must be one of {', '.join(LEVELS)}, got {level!r}")
        level = getattr(logging, level.upper())
    for name in (LOGGER_NAME, "malleo.reconfig"):     # children log through the root
        child = logging.getLogger(name)
        for handler in list(child.handlers):
            child.removeHandler(handler)
        child.setLevel(logging.NOTSET)
        child.propagate = True
    logger = logging.getLogger(ROOT_LOGGER)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
