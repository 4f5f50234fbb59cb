"""How the dashboard writes values for people: ages, times, JSON, counts.

Jinja2 filters, registered on the dashboard's environment; every one returns
plain text, which the templates' autoescaping then escapes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment

from tenure.clock import spoken
from tenure.task import Status

STATUSES = [status.value for status in Status]


def age(seconds: float | None) -> str:
    """``18 ms``, ``42 s``, ``3.5 min``: a duration at a glance (:func:`spoken`)."""
    return "" if seconds is None else spoken(seconds)


def since(moment: datetime | None, now: datetime) -> str:
    """How long ago ``moment`` was, as :func:`age` writes it."""
    return "" if moment is None else age((now - moment).total_seconds())


def when(moment: datetime | None) -> str:
    """A time in UTC to the second, e.g. ``2026-11-23 22:54:35``."""
    return "" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S}"


def pretty(value: Any) -> str:
    """A JSON value, indented, keys in their order."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def count(value: int) -> str:
    """A count with thousands separators."""
    return f"{value:,}"


def environment(env: Environment) -> Environment:
    """``env`` with the dashboard's filters and globals, escaping every
    template's values whatever the template's name."""
    env.autoescape = True
    env.filters.update(age=age, since=since, when=when, pretty=pretty, count=count)
    env.globals.update(statuses=STATUSES)
    return env
