"""Looking after tasks: the one service behind ``app.tasks``, the CLI and the dashboard."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Collection, Iterator
from datetime import datetime

from tenure.errors import AmbiguousId, InvalidTransition, TaskNotFound
from tenure.store import (
    PausedTopic,
    Store,
    TaskFilter,
    TopicAgeing,
    TopicLimit,
    TopicRate,
    UniqueLock,
)
from tenure.store.operating import DEFAULT_WINDOW
from tenure.store.types import Event, GroupProgress, MinuteRate, Page, QueueStats, WorkerInfo
from tenure.store.validate import status as parse_status
from tenure.task import Status, Task


class TaskAdmin:
    """``app.tasks``: get, list, count, iterate, group, cancel, retry, pause and
    resume a topic, the unique locks held and the live workers. The one service
    that looks at and steers a store for people: the ``tenure`` command goes
    through it, and so do the HTTP API and the dashboard."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, task_id: str) -> Task:
        """The task with ``task_id``; ``TaskNotFound`` if there is none."""
        task = self.store.task_get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        return task

    def resolve(self, id_or_prefix: str) -> Task:
        """The task whose id is ``id_or_prefix``, or else the one task whose id
        begins with it; ``TaskNotFound`` if none, ``AmbiguousId`` if several."""
        task = self.store.task_get(id_or_prefix)
        if task is not None:
            return task
        found = self.store.task_find(id_or_prefix)
        if len(found) > 1:
            raise AmbiguousId(id_or_prefix)
        if not found:
            raise TaskNotFound(id_or_prefix, prefix=True)
        return self.get(found[0])

    def history(self, task_id: str) -> builtins.list[Event]:
        """The task's events still in the log, oldest first."""
        return self.store.task_events(task_id)

    def stats(self, *, window: float = DEFAULT_WINDOW) -> QueueStats:
        """The queue at a glance (see :meth:`~tenure.store.Store.task_stats`)."""
        return self.store.task_stats(window=window)

    def rates(self, *, minutes: int = 60) -> builtins.list[MinuteRate]:
        """Tasks entering each status per minute, the last ``minutes`` minutes."""
        return self.store.task_rates(minutes=minutes)

    def groups(self, *, limit: int = 50, scan: int = 100_000) -> builtins.list[GroupProgress]:
        """The groups of the newest ``scan`` tasks, newest first, with their progress."""
        return self.store.task_groups(limit=limit, scan=scan)

    def page(
        self,
        filters: TaskFilter | None = None,
        *,
        cursor: str | None = None,
        limit: int = 50,
        newest_first: bool = True,
        scan: int | None = None,
    ) -> Page:
        """One page of matching tasks, newest first unless told otherwise; its
        ``cursor`` resumes after it. ``scan`` bounds the tasks examined (see
        :meth:`~tenure.store.Store.task_list`)."""
        return self.store.task_list(
            filters, cursor=cursor, limit=limit, newest_first=newest_first, scan=scan
        )

    def purge(
        self, statuses: Collection[Status | str], older_than: float, *, batch: int = 1000
    ) -> Iterator[int]:
        """Delete the tasks in ``statuses`` (done, failed, cancelled) that finished
        more than ``older_than`` seconds ago, a batch at a time; yields how many
        each batch deleted, for a progress bar."""
        while deleted := self.store.task_prune(older_than, limit=batch, statuses=statuses):
            yield deleted

    def list(
        self,
        *,
        status: Status | str | None = None,
        topic: str | None = None,
        sub_topic: str | None = None,
        name: str | None = None,
        group_id: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        limit: int = 100,
    ) -> list[Task]:
        """Up to ``limit`` matching tasks, oldest first."""
        filters = _filters(
            status=status,
            topic=topic,
            sub_topic=sub_topic,
            name=name,
            group_id=group_id,
            created_from=created_from,
            created_to=created_to,
        )
        return self.store.task_list(filters, limit=limit).tasks

    def count(
        self,
        *,
        status: Status | str | None = None,
        topic: str | None = None,
        sub_topic: str | None = None,
        name: str | None = None,
        group_id: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> int:
        """How many tasks match (one query, whatever their number)."""
        filters = _filters(
            status=status,
            topic=topic,
            sub_topic=sub_topic,
            name=name,
            group_id=group_id,
            created_from=created_from,
            created_to=created_to,
        )
        return self.store.task_count(filters)

    def workers(self) -> builtins.list[WorkerInfo]:
        """The live workers, as their heartbeats last said."""
        return self.store.worker_list()

    def locks(self, *, limit: int = 1000) -> builtins.list[UniqueLock]:
        """The unique locks held now, oldest first."""
        return self.store.unique_lock_list(limit=limit)

    def iter(
        self, *, status: Status | str | None = None, topic: str | None = None
    ) -> Iterator[Task]:
        """Every matching task, page by page."""
        filters = _filters(
            status=status,
            topic=topic,
            sub_topic=None,
            name=None,
            group_id=None,
            created_from=None,
            created_to=None,
        )
        cursor = None
        while True:
            page = self.store.task_list(filters, cursor=cursor, limit=500)
            yield from page.tasks
            if page.cursor is None:
                return
            cursor = page.cursor

    def group(self, group_id: str) -> builtins.list[Task]:
        """Every task of a group, oldest first."""
        return self.store.task_list_group(group_id)

    def cancel(self, task_id: str) -> Task:
        return self.store.task_cancel(task_id)

    def pause(self, topic: str) -> PausedTopic:
        """Stop every worker sharing the store starting ``topic``'s tasks, from
        their next reservation: running ones finish, pending ones wait."""
        return self.store.topic_pause(topic)

    def resume(self, topic: str) -> bool:
        """Let workers start ``topic``'s tasks again; ``False`` if it was not paused."""
        return self.store.topic_resume(topic)

    def paused(self) -> builtins.list[PausedTopic]:
        """The paused topics, by name."""
        return self.store.topics_paused()

    def limit(self, topic: str, max_running: int | None) -> TopicLimit | None:
        """Let at most ``max_running`` tasks of ``topic`` run at once, across
        every worker sharing the store, from their next reservation (``None``:
        no limit). A limit declared in code (``app.limit``) is stored again
        when a scheduler begins its term."""
        return self.store.topic_limit(topic, max_running)

    def scale(self, worker_id: str, concurrency: int) -> WorkerInfo | None:
        """Ask a running worker to run ``concurrency`` tasks at once; it takes
        the number at its next heartbeat. ``None`` if no such worker is alive."""
        return self.store.worker_scale(worker_id, concurrency)

    def rate_limit(self, topic: str, max_starts: int | None, per: float = 60.0) -> TopicRate | None:
        """Let at most ``max_starts`` tasks of ``topic`` start within any
        ``per`` seconds, across every worker (``None``: no rate)."""
        return self.store.topic_rate(topic, max_starts, per=per)

    def rate_limits(self) -> builtins.list[TopicRate]:
        """The topics' rates, by topic."""
        return self.store.topic_rates()

    def ageing(self, topic: str, every: float | None, most: int = 10) -> TopicAgeing | None:
        """Take ``topic``'s pending tasks as if their priority rose by one for
        every ``every`` seconds waited, at most ``most`` (``None``: priority
        alone), from the next reservation."""
        return self.store.topic_ageing(topic, every, most=most)

    def ageings(self) -> builtins.list[TopicAgeing]:
        """The topics' ageing, by topic."""
        return self.store.topic_ageings()

    def limits(self) -> builtins.list[TopicLimit]:
        """The topics' limits, by topic."""
        return self.store.topic_limits()

    def retry(self, task_id: str) -> Task:
        return self.store.task_retry(task_id)

    def matching(self, filters: TaskFilter, most: int | None = None) -> builtins.list[Task] | None:
        """The tasks ``filters`` match, oldest first, if they are at most
        ``most`` (or however many with ``None``); ``None`` if there are more (a
        bulk change refuses them all)."""
        found: builtins.list[Task] = []
        cursor, bound = None, sys.maxsize if most is None else most
        while len(found) <= bound:
            page = self.store.task_list(filters, cursor=cursor, limit=min(bound + 1, 1000))
            found += page.tasks
            if page.cursor is None:
                break
            cursor = page.cursor
        return found if len(found) <= bound else None

    def change_many(
        self, action: str, ids: Collection[str]
    ) -> tuple[builtins.list[Task], builtins.list[tuple[str, str]]]:
        """Retry or cancel (``action``) each task of ``ids``, one after the
        other: the tasks changed, and the ids refused with why (gone, or a
        status that does not allow it). A store failure stops it and is raised."""
        act = self.retry if action == "retry" else self.cancel
        changed: builtins.list[Task] = []
        refused: builtins.list[tuple[str, str]] = []
        for task_id in ids:
            try:
                changed.append(act(task_id))
            except (InvalidTransition, TaskNotFound) as exc:
                refused.append((task_id, str(exc)))
        return changed, refused


def _filters(
    *,
    status: Status | str | None,
    topic: str | None,
    sub_topic: str | None,
    name: str | None,
    group_id: str | None,
    created_from: datetime | None,
    created_to: datetime | None,
) -> TaskFilter:
    return TaskFilter(
        topic=topic,
        sub_topic=sub_topic,
        status=None if status is None else parse_status(status),
        name=name,
        group_id=group_id,
        created_from=created_from,
        created_to=created_to,
    )
