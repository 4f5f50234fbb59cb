"""Two Apps for the rolling-deploy tests, on one topic: ``old``, the code before a
deploy, and ``new``, the code after it, which adds the task ``rolling.added``.
Their store URL comes from ``--url``."""

from __future__ import annotations

import os
from typing import Any

import tenure

TOPIC = "rolling"
ADDED = "rolling.added"
NOBODY = "rolling.nobody"
"""A name neither App declares."""

old = tenure.App()
new = tenure.App()


def ping() -> str:
    return "pong"


def added(value: int) -> dict[str, Any]:
    """Says which process ran it."""
    return {"value": value, "pid": os.getpid()}


old.task(ping, topic=TOPIC, name="rolling.ping")
new.task(ping, topic=TOPIC, name="rolling.ping")
new.task(added, topic=TOPIC, name=ADDED)  # one attempt: a spent one would fail it
