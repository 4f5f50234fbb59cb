"""What operators need from a store, beyond the task protocol: a task found by a
unique prefix of its id, a task's history, the queue at a glance, the tasks
entering each status minute by minute, and the progress of recent groups; and
what ``tenure doctor`` reads to say what will hurt later: recent run times,
the scheduler's last sign of life, the database's settings and tables.

The command line, the HTTP API and the dashboard read a store through these, so
each number they show is computed once, the same way, on every backend.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tenure.errors import InvalidInput
from tenure.store import validate
from tenure.store.backend import Backend
from tenure.store.types import (
    Backlog,
    Event,
    GroupProgress,
    MinuteRate,
    QueueStats,
    RunTimes,
    TableKey,
)
from tenure.task import Status

DEFAULT_WINDOW = 300.0
"""Seconds of endings counted by :meth:`Operating.task_stats` (the last five minutes)."""

MAX_RATE_MINUTES = 1440
"""Most minutes :meth:`Operating.task_rates` reports: a day, which PostgreSQL's
tallies keep minute by minute (older minutes are folded into totals)."""

MINUTE = timedelta(minutes=1)

BACKLOG_CAP = 100_000
"""Rows :meth:`Operating.retention_backlog` counts at most, of each kind."""

RUN_SAMPLE = 10_000
"""Finished tasks :meth:`Operating.task_run_times` looks at by default: the
newest, along the index retention walks, so a store of millions costs what a
small one does."""


class Operating(Backend):
    """The operator's reads (a part of :class:`~tenure.store.Store`)."""

    def task_find(self, prefix: str) -> list[str]:
        """Up to two ids that begin with ``prefix``: one means it names a task,
        two that it is ambiguous. Exact ids are found by ``task_get``; this is
        for people who type the start of one."""
        return self._task_find(validate.text(prefix, "prefix"))

    def task_last_id(self, prefix: str) -> str | None:
        """The greatest id that begins with ``prefix`` (the latest, for ids that
        sort by time, such as periodic ticks')."""
        return self._task_last_id(validate.text(prefix, "prefix"))

    def task_events(self, task_id: str) -> list[Event]:
        """Every event of one task still in the log, oldest first."""
        return self._task_events(validate.text(task_id, "task_id"))

    def task_transition_totals(self) -> dict[str, dict[Status, int]]:
        """Per topic, how many times tasks entered each status (a creation enters
        its first), one for each such event the log records (a start refused by
        a unique lock enters running, then its rule's outcome): counters for
        ``rate()``, kept since the schema had them (PostgreSQL's 0008, SQLite's
        0006). They never go down: pruning tasks or events leaves them alone."""
        return self._task_transition_totals()

    def task_stats(self, *, window: float = DEFAULT_WINDOW) -> QueueStats:
        """Tasks per topic and status; per topic, the longest wait among the
        pending tasks runnable now, as the earliest time one of them became
        runnable (its ``run_at``, or its creation if it had no delay); and the
        endings per topic over exactly the last ``window`` seconds."""
        window = validate.seconds(window, "window")
        now = self._clock_now()
        if window > validate.MAX_SECONDS:
            raise InvalidInput("window", f"must be at most {validate.MAX_SECONDS} seconds")
        return self._task_stats(now, now - timedelta(seconds=window))

    def task_rates(self, *, minutes: int = 60, topic: str | None = None) -> list[MinuteRate]:
        """How many tasks (of ``topic``, or all) entered each status in each of
        the last ``minutes`` whole minutes by the store's clock, the current one
        included: one entry per minute, oldest first, none missing. Counted from
        what each store keeps per minute (PostgreSQL's tallies, SQLite's event
        log), so a chart of a busy queue costs what a quiet one's does."""
        minutes = validate.integer(minutes, "minutes", minimum=1, bounds=(1, MAX_RATE_MINUTES))
        topic = validate.optional_text(topic, "topic")
        current = _minute_of(self._clock_now())
        since = current - (minutes - 1) * MINUTE
        entered = self._task_rates(since, current + MINUTE, topic)
        starts = (since + n * MINUTE for n in range(minutes))
        return [MinuteRate(start, _every_status(entered.get(start, {}))) for start in starts]

    def task_groups(self, *, limit: int = 50, scan: int = 100_000) -> list[GroupProgress]:
        """The groups with tasks among the newest ``scan`` tasks, the group of
        the newest task first, at most ``limit``: each with its tasks per status
        (all of them, not only the newest) and when its first one was created.
        ``scan`` bounds the work: older groups are not looked for."""
        limit = validate.page_limit(limit)
        scan = validate.scan(scan)
        counts: dict[str, dict[Status, int]] = {}  # in the backend's order
        first: dict[str, datetime] = {}
        for group_id, status, count, created_at in self._task_groups(limit, scan):
            counts.setdefault(group_id, {})[status] = count
            first[group_id] = min(created_at, first.get(group_id, created_at))
        return [GroupProgress(g, _every_status(c), first[g]) for g, c in counts.items()]

    def retention_backlog(
        self, older_than: float, *, cap: int = BACKLOG_CAP, now: datetime | None = None
    ) -> Backlog:
        """How many finished tasks and events are older than ``older_than``
        seconds, the rows retention has yet to delete, each counted up to
        ``cap``: a walk of the retention indexes that stays short however long
        the backlog."""
        older_than = validate.seconds(older_than, "older_than", allow_zero=True)
        cap = validate.integer(cap, "cap", minimum=1)
        validate.moment(now, "now")
        tasks, events = self._retention_backlog(older_than, cap, now)
        return Backlog(tasks, events, cap)

    def task_run_times(self, *, sample: int = RUN_SAMPLE) -> list[RunTimes]:
        """Per task name, by name, how long its runs took among the newest
        ``sample`` finished tasks (done, or failed after running): the 99th
        percentile of the last attempt's duration, and the shortest lease those
        attempts were held under. A bounded read: older history is not looked at."""
        return self._task_run_times(validate.scan(sample, "sample"))

    def leader_silence(self, name: str) -> float | None:
        """Seconds since the holder of leadership ``name`` last kept it (took or
        extended it), by the store's clock; ``None`` when nobody holds it. A
        leader extends every cycle, so silence past its lease means it is gone."""
        return self._leader_silence(validate.text(name, "name"))

    def database_settings(self) -> dict[str, str]:
        """The database's settings that durability, capacity and upkeep depend
        on, by name, as the database reports them: PostgreSQL's ``fsync``,
        ``synchronous_commit``, ``max_connections``,
        ``superuser_reserved_connections`` and ``autovacuum``; SQLite's
        ``journal_mode`` and ``synchronous`` (``off``, ``normal``, ``full`` or
        ``extra``) on this store's connection, which its URL sets."""
        return self._database_settings()

    def table_keys(self) -> list[TableKey]:
        """tenure's tables in the store's schema, by name, each with its
        schema, primary key and replica identity (what a publication needs to
        replicate it) and whether autovacuum may vacuum it. Empty on SQLite,
        whose copies (file copies, page-level replication) need no key and
        which has no autovacuum to turn off."""
        return self._table_keys()


_STATUSES = tuple(Status)  # iterating the enum itself costs ten times more


def _minute_of(moment: datetime) -> datetime:
    """The start of the minute ``moment`` falls in, in UTC."""
    return moment.astimezone(UTC).replace(second=0, microsecond=0)


def _every_status(counts: dict[Status, int]) -> dict[Status, int]:
    """``counts`` with every status a key: charts need no missing-key case."""
    filled = dict.fromkeys(_STATUSES, 0)
    filled.update(counts)
    return filled
