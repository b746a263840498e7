"""Structured logs for the agent: one event name plus key=value fields per line.

``--log-format json`` writes one JSON object per line (``ts``, ``level``, ``event`` and the
fields), for journald/Loki/Elasticsearch; ``text`` writes
``2026-11-30T03:00:00Z INFO cycle pending=12 ...``.  Both go to stderr.
"""
from __future__ import annotations

import json
import logging
import sys
import time

LOGGER_NAME = "malleo.agent"
FORMATS = ("json", "text")


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


def configure(fmt: str = "text", level: int = logging.INFO, stream=None) -> logging.Logger:
    """Route the agent's logger to ``stream`` (default stderr) in format ``fmt``."""
    if fmt not in FORMATS:
        raise ValueError(f"log format: must be one of {', '.join(FORMATS)}, got {fmt!r}")
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
