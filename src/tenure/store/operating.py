"""What operators need from a store, beyond the task protocol: a task found by a
unique prefix of its id, a task's history, and the queue at a glance.

The command line, the HTTP API and the dashboard read a store through these, so
each number they show is computed once, the same way, on every backend.
"""

from __future__ import annotations

from datetime import timedelta

from tenure.errors import InvalidInput
from tenure.store import validate
from tenure.store.backend import Backend
from tenure.store.types import Event, QueueStats
from tenure.task import Status

DEFAULT_WINDOW = 300.0
"""Seconds of endings counted by :meth:`Operating.task_stats` (the last five minutes)."""


class Operating(Backend):
    """The operator's reads (a part of :class:`~tenure.store.Store`)."""

    def task_find(self, prefix: str) -> list[str]:
        """Up to two ids that begin with ``prefix``: one means it names a task,
        two that it is ambiguous. Exact ids are found by ``task_get``; this is
        for people who type the start of one."""
        return self._task_find(_like_prefix(prefix))

    def task_last_id(self, prefix: str) -> str | None:
        """The greatest id that begins with ``prefix`` (the latest, for ids that
        sort by time, such as periodic ticks')."""
        return self._task_last_id(_like_prefix(prefix))

    def task_events(self, task_id: str) -> list[Event]:
        """Every event of one task still in the log, oldest first."""
        return self._task_events(validate.text(task_id, "task_id"))

    def task_transition_totals(self) -> dict[str, dict[Status, int]]:
        """Per topic, how many times tasks entered each status (a creation enters
        its first): counters for ``rate()``. PostgreSQL tallies them since the
        schema had them; SQLite counts the events still kept."""
        return self._task_transition_totals()

    def task_stats(self, *, window: float = DEFAULT_WINDOW) -> QueueStats:
        """Tasks per topic and status, the oldest runnable pending task's wait per
        topic, and the endings per topic over the last ``window`` seconds."""
        window = validate.seconds(window, "window")
        now = self._clock_now()
        if window > validate.MAX_SECONDS:
            raise InvalidInput("window", f"must be at most {validate.MAX_SECONDS} seconds")
        return self._task_stats(now, now - timedelta(seconds=window))


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern for ids beginning with ``prefix``, its own characters literal."""
    prefix = validate.text(prefix, "prefix")
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
