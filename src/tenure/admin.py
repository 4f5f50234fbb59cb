"""Looking after tasks: the one service behind ``app.tasks``, the CLI and the dashboard."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from datetime import datetime

from tenure.errors import TaskNotFound
from tenure.store import Store, TaskFilter, UniqueLock
from tenure.store.types import WorkerInfo
from tenure.store.validate import status as parse_status
from tenure.task import Status, Task


class TaskAdmin:
    """``app.tasks``: get, list, count, iterate, group, cancel, retry, the unique
    locks held and the live workers. The one service that looks at and steers a
    store for people: the ``tenure`` command goes through it, and so will the HTTP
    API and the dashboard."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, task_id: str) -> Task:
        """The task with ``task_id``; ``TaskNotFound`` if there is none."""
        task = self.store.task_get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        return task

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

    def retry(self, task_id: str) -> Task:
        return self.store.task_retry(task_id)


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
