"""Flow control in the store: what holds enqueued tasks back from starting,
for every worker that shares the store.

**Paused topics**: an operator's stop on a topic's new starts. A pause is a row
the reserve statements read themselves: no worker reserves a task of a paused
topic from the moment the pause commits, on every machine, and across
restarts. Tasks running when it comes run on to their end; pending ones wait,
and spend no attempt. A resume deletes the row, and wakes the waiting workers.

**Deadlines**: a task with ``expires`` must start within that many seconds of
its creation. Past it, the reserve statements skip it, so it never starts late
whatever the sweep's pace; the scheduler's sweep (:meth:`FlowControl.task_expire`)
ends it cancelled, its error saying why.

**Rates**: at most so many of a topic's tasks start within a window, on the
store's clock. Each start under a rate is noted as it is made; the reserve
statements count the window's starts under the rate's lock before they take
more.

**Runtime control of workers**: an operator's new concurrency for a running
worker, kept on its registry row until its heartbeat reads it back.

**Concurrency limits**: at most so many tasks of a topic (a row here, set at
run time) or of a key computed from a task's arguments (kept with the task)
run at once; **ordered keys** run one task at a time, in enqueue order. The
reserve statements count what runs under each limit before they take more,
in the same statement, so a limit holds across every worker, and a dead
worker's tasks free their room as their leases are rolled back. A task over
its limit waits pending, spending no attempt, and the scan passes over it:
other topics and keys keep flowing.

**Priority ageing**: a topic's pending tasks are taken as if their priority
rose by one for every so many seconds waited, up to a most, so that
low-priority and retried work (whose priority each retry lowers) still starts
under a steady flow of higher priorities. Computed by the reserve statements
from the time a task became runnable; nothing is written as tasks wait.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from datetime import datetime

from tenure.errors import InvalidInput
from tenure.store import validate
from tenure.store.types import WorkerInfo
from tenure.task import TaskError


@dataclass(frozen=True, slots=True)
class PausedTopic:
    """A topic whose tasks no worker starts, since ``paused_at``."""

    topic: str
    paused_at: datetime


@dataclass(frozen=True, slots=True)
class TopicLimit:
    """At most ``max_running`` tasks of ``topic`` run at once, since ``set_at``."""

    topic: str
    max_running: int
    set_at: datetime


@dataclass(frozen=True, slots=True)
class TopicRate:
    """At most ``max_starts`` tasks of ``topic`` start within any
    ``per_seconds``, since ``set_at``."""

    topic: str
    max_starts: int
    per_seconds: float
    set_at: datetime


@dataclass(frozen=True, slots=True)
class TopicAgeing:
    """A pending task of ``topic`` is taken as if its priority were one higher
    for every ``every_seconds`` it has waited, at most ``most`` higher, since
    ``set_at``."""

    topic: str
    every_seconds: float
    most: int
    set_at: datetime


MIN_AGEING_STEP = 0.001
"""The shortest span a step of ageing may take, in seconds (a wait is divided
by it, on the store's clock: a smaller one could overflow)."""

EXPIRED = TaskError("Expired", "not started by its deadline (expires)")
"""The error of a task that expired before it started."""

EXPIRE_BATCH = 1000
"""Most tasks one sweep statement cancels."""


class FlowControl:
    """Paused topics and deadlines (mixed into :class:`~tenure.store.Store`)."""

    def task_expire(self, *, limit: int = EXPIRE_BATCH, now: datetime | None = None) -> list[str]:
        """Cancel the pending tasks past their deadline, at most ``limit``, the
        oldest first, each with :data:`EXPIRED` as its error; their ids."""
        limit = validate.integer(limit, "limit", minimum=1)
        return self._task_expire(limit, validate.moment(now, "now"))

    def topic_pause(self, topic: str, *, now: datetime | None = None) -> PausedTopic:
        """Stop workers reserving ``topic``'s tasks; pausing it again keeps
        the first pause's time."""
        return self._topic_pause(validate.text(topic, "topic"), validate.moment(now, "now"))

    def topic_resume(self, topic: str) -> bool:
        """Let workers reserve ``topic``'s tasks again; ``False`` if it was
        not paused."""
        return self._topic_resume(validate.text(topic, "topic"))

    def topics_paused(self) -> list[PausedTopic]:
        """The paused topics, by name."""
        return self._topics_paused()

    def topic_limit(
        self, topic: str, max_running: int | None, *, now: datetime | None = None
    ) -> TopicLimit | None:
        """Let at most ``max_running`` tasks of ``topic`` run at once, across
        every worker (``None``: no limit); the limit now set, if any. Tasks
        running beyond a lowered limit run on to their end."""
        topic = validate.text(topic, "topic")
        if max_running is None:
            self._topic_limit_clear(topic)
            return None
        most = validate.integer(max_running, "max_running", minimum=1)
        return self._topic_limit_set(topic, most, validate.moment(now, "now"))

    def topic_limits(self) -> list[TopicLimit]:
        """The topics' limits, by topic."""
        return self._topic_limits()

    def topic_rate(
        self,
        topic: str,
        max_starts: int | None,
        *,
        per: float = 60.0,
        now: datetime | None = None,
    ) -> TopicRate | None:
        """Let at most ``max_starts`` tasks of ``topic`` start within any
        ``per`` seconds, across every worker, on the store's clock (``None``:
        no rate); the rate now set, if any."""
        topic = validate.text(topic, "topic")
        if max_starts is None:
            self._topic_rate_clear(topic)
            return None
        most = validate.integer(max_starts, "max_starts", minimum=1)
        span = validate.seconds(per, "per")
        return self._topic_rate_set(topic, most, span, validate.moment(now, "now"))

    def topic_rates(self) -> list[TopicRate]:
        """The topics' rates, by topic."""
        return self._topic_rates()

    def rate_prune(self, *, now: datetime | None = None) -> int:
        """Forget the starts no rate's window holds any more; how many."""
        return self._rate_prune(validate.moment(now, "now"))

    @abstractmethod
    def _topic_rate_set(
        self, topic: str, most: int, per: float, now: datetime | None
    ) -> TopicRate: ...

    @abstractmethod
    def _topic_rate_clear(self, topic: str) -> bool: ...

    @abstractmethod
    def _topic_rates(self) -> list[TopicRate]: ...

    @abstractmethod
    def _rate_prune(self, now: datetime | None) -> int: ...

    def topic_ageing(
        self,
        topic: str,
        every: float | None,
        *,
        most: int = 10,
        now: datetime | None = None,
    ) -> TopicAgeing | None:
        """Take ``topic``'s pending tasks as if their priority rose by one for
        every ``every`` seconds they have waited, at most ``most`` (``None``:
        by their priority alone); the ageing now set, if any."""
        topic = validate.text(topic, "topic")
        if every is None:
            self._topic_ageing_clear(topic)
            return None
        step = validate.seconds(every, "every")
        if step < MIN_AGEING_STEP:
            raise InvalidInput("every", f"must be at least {MIN_AGEING_STEP} s")
        most = validate.integer(most, "most", minimum=1, bounds=validate.INT32)
        return self._topic_ageing_set(topic, step, most, validate.moment(now, "now"))

    def topic_ageings(self) -> list[TopicAgeing]:
        """The topics' ageing, by topic."""
        return self._topic_ageings()

    @abstractmethod
    def _topic_ageing_set(
        self, topic: str, every: float, most: int, now: datetime | None
    ) -> TopicAgeing: ...

    @abstractmethod
    def _topic_ageing_clear(self, topic: str) -> bool: ...

    @abstractmethod
    def _topic_ageings(self) -> list[TopicAgeing]: ...

    def worker_scale(self, worker_id: str, concurrency: int) -> WorkerInfo | None:
        """Ask the running worker ``worker_id`` to run ``concurrency`` tasks at
        once, which it takes at its next heartbeat; ``None`` if no such worker
        is registered."""
        worker_id = validate.text(worker_id, "worker_id")
        most = validate.integer(concurrency, "concurrency", minimum=1, bounds=validate.INT32)
        return self._worker_scale(worker_id, most)

    @abstractmethod
    def _worker_scale(self, worker_id: str, concurrency: int) -> WorkerInfo | None: ...

    @abstractmethod
    def _topic_limit_set(self, topic: str, most: int, now: datetime | None) -> TopicLimit: ...

    @abstractmethod
    def _topic_limit_clear(self, topic: str) -> bool: ...

    @abstractmethod
    def _topic_limits(self) -> list[TopicLimit]: ...

    @abstractmethod
    def _topic_pause(self, topic: str, now: datetime | None) -> PausedTopic: ...

    @abstractmethod
    def _topic_resume(self, topic: str) -> bool: ...

    @abstractmethod
    def _topics_paused(self) -> list[PausedTopic]: ...

    @abstractmethod
    def _task_expire(self, limit: int, now: datetime | None) -> list[str]: ...
