"""The observer: named queries over tasks, run on a schedule, each run reported.

An :class:`Observation` is a query (status, topic, sub-topic, task name, group,
age, a window of creation times) with a schedule: a time of day (``at``, UTC;
the default is a daily report at midnight) or an interval (``every`` seconds).
The elected scheduler runs due observations each cycle. A run counts the
matching tasks, keeps the first ``limit`` ids (oldest first), and saves them as
the query's latest :class:`~tenure.store.types.Report`; the store appends a
report event in the same transaction, which followers and subscribers receive.

Exactly once per slot: a report is saved only for a slot later than the one
saved, so two schedulers that run the same slot (a failover) save it once and
append one event. Like periodic tasks, a slot is run only within ``lookback``
seconds of its time: a scheduler started at 14:00 does not make up the
midnight report.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from tenure.checks import integer, optional_text, seconds, text
from tenure.errors import InvalidInput
from tenure.store import Store, TaskFilter
from tenure.store.eventlog import MAX_REPORT_IDS
from tenure.store.types import Report
from tenure.task import Status

log = logging.getLogger("tenure.scheduler")

DEFAULT_AT = "00:00:00"
"""When an observation with no schedule runs: every day at midnight UTC."""

TODAY = "today"


@dataclass(frozen=True)
class Observation:
    """A named query over tasks and when to run it (see :meth:`tenure.App.observe`)."""

    key: str
    status: Status | None = None
    topic: str | None = None
    sub_topic: str | None = None
    name: str | None = None
    group: str | None = None
    age: float | None = None
    since: float | str | None = None
    at: str | None = None
    every: float | None = None
    limit: int = 1000

    def __post_init__(self) -> None:
        text(self.key, "key")
        for field in ("topic", "sub_topic", "name", "group"):
            optional_text(getattr(self, field), field)
        if self.status is not None and not isinstance(self.status, Status):
            raise InvalidInput("status", f"not a task status: {self.status!r}")
        if self.age is not None:
            seconds(self.age, "age", allow_zero=True)
        if self.since is not None and self.since != TODAY:
            if isinstance(self.since, str):
                raise InvalidInput("since", "seconds, or 'today'")
            seconds(self.since, "since")
        integer(self.limit, "limit", minimum=0, bounds=(0, MAX_REPORT_IDS))
        self._check_schedule()

    def _check_schedule(self) -> None:
        if self.at is not None and self.every is not None:
            raise InvalidInput(
                "every", "give a time of day (at=) or an interval (every=), not both"
            )
        if self.every is not None:
            if seconds(self.every, "every") < 1:
                raise InvalidInput("every", "an interval must be at least 1 second")
            return
        object.__setattr__(self, "at", DEFAULT_AT if self.at is None else self.at)
        self.time_of_day()

    def time_of_day(self) -> time:
        """``at`` as a time with its zone (UTC unless ``at`` names an offset)."""
        if not isinstance(self.at, str) or not self.at:
            raise InvalidInput("at", f"a time of day such as '00:00:00', not {self.at!r}")
        try:
            moment = time.fromisoformat(self.at)
        except ValueError:
            raise InvalidInput("at", f"a time of day such as '00:00:00', not {self.at!r}") from None
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

    def slot(self, now: datetime) -> datetime:
        """The latest scheduled time at or before ``now``."""
        if self.every is not None:
            every = float(self.every)
            return datetime.fromtimestamp(math.floor(now.timestamp() / every) * every, UTC)
        at = self.time_of_day()
        assert at.tzinfo is not None  # time_of_day sets one
        local_today = now.astimezone(at.tzinfo).date()  # today where the offset is
        today = datetime.combine(local_today, at).astimezone(UTC)
        return today if today <= now else today - timedelta(days=1)

    def filters(self, now: datetime) -> TaskFilter:
        """The store's filter for a run at ``now``."""
        created_from = None
        if self.since == TODAY:
            created_from = datetime.combine(now.astimezone(UTC).date(), time(tzinfo=UTC))
        elif self.since is not None:
            created_from = now - timedelta(seconds=float(self.since))
        created_to = None if self.age is None else now - timedelta(seconds=float(self.age))
        return TaskFilter(
            topic=self.topic,
            sub_topic=self.sub_topic,
            status=self.status,
            name=self.name,
            group_id=self.group,
            created_from=created_from,
            created_to=created_to,
        )

    def describe(self) -> dict[str, Any]:
        """The query and its schedule as JSON, saved with each report."""
        fields = ("status", "topic", "sub_topic", "name", "group", "age", "since", "at", "every")
        return {
            f: str(v) if f == "status" else v for f in fields if (v := getattr(self, f)) is not None
        }


class Observer:
    """The scheduler step that runs due observations."""

    def __init__(self, observations: list[Observation], *, lookback: float = 60.0) -> None:
        keys = [o.key for o in observations]
        if len(set(keys)) != len(keys):
            raise InvalidInput("observe", "two observations have the same key")
        self.observations = observations
        self.lookback = timedelta(seconds=lookback)
        self._done: dict[str, datetime] = {}

    def reset(self) -> None:
        """Forget what ran (a new term of leadership asks the store)."""
        self._done.clear()

    def run_once(self, store: Store, owner: str) -> list[Report]:
        """Run the observations whose slot has come; the reports saved."""
        saved = []
        for observation in self.observations:
            now = store.clock_now()
            slot = observation.slot(now)
            if now - slot > self.lookback or self._done.get(observation.key) == slot:
                continue
            report = self._run(store, observation, slot, now, owner)
            self._done[observation.key] = slot
            if report is not None:
                saved.append(report)
        return saved

    def _run(
        self, store: Store, observation: Observation, slot: datetime, now: datetime, owner: str
    ) -> Report | None:
        filters = observation.filters(now)
        found = store.task_list(filters, limit=observation.limit) if observation.limit else None
        report = store.report_save(
            observation.key,
            slot,
            owner=owner,
            query=observation.describe(),
            task_ids=[task.id for task in found.tasks] if found else [],
            total=store.task_count(filters),
        )
        if report is not None:
            log.info("observer %s: %d tasks at %s", report.key, report.total, slot.isoformat())
        return report


class Reports:
    """The observer's latest reports, read from the store: ``app.reports``."""

    def __init__(self, store: Callable[[], Store]) -> None:
        self._store = store

    def get(self, key: str) -> Report | None:
        """The latest report of the query ``key``; ``None`` if it has not run."""
        return self._store().report_get(key)

    def list(self) -> list[Report]:
        """The latest report of every query that has run, by key."""
        return self._store().report_list()
