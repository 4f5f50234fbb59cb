"""How tenure's long-running commands log: readable text on a terminal, or one JSON
object per line for log pipelines.

Library code only calls :mod:`logging`; this module is what the ``tenure`` command
installs. Task log records carry their facts as attributes (``task_id``,
``task_name``, ``topic``, ``attempt``, ``duration``, ``status``, ``error`` and, for a
failure, ``traceback`` — the text of the exception's traceback, which may come from
another process), so both formats say the same thing and a failure's traceback is
never lost.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error", "critical")
FORMATS = ("text", "json")

TASK_FIELDS = ("task_id", "task_name", "topic", "attempt", "duration", "status", "error")
"""Record attributes a task's log lines may carry, in the order JSON lines show them."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class TextFormatter(logging.Formatter):
    """The usual one-line format, followed by a failed task's traceback."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        trace = getattr(record, "traceback", None)
        if trace:
            text = f"{text}\n{trace.rstrip()}"
        return text


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the task's fields
    that the record carries, and a traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in TASK_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        trace = getattr(record, "traceback", None)
        if record.exc_info:
            trace = self.formatException(record.exc_info)
        if trace:
            line["traceback"] = trace
        return json.dumps(line, default=str)


def configure(level: str = "info", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` or above to ``stream`` (stderr) in
    ``fmt``; replaces handlers installed before, so it may be called again."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The connection pool warns of each failed reconnection attempt, a dozen
    # times per outage; tenure reports the operations that fail, in its words.
    # The pool's errors still show.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
