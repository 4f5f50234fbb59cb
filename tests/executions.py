"""A task as an executor receives it, for tests of the worker's pools."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tenure import Status, Task
from tenure.function import TaskFunction


def running_task(function: TaskFunction[Any, Any], task_id: str) -> Task:
    """The task ``function()`` would be once reserved, with the id ``task_id``."""
    now = datetime.now(UTC)
    new = function.new_task((), {})
    return Task(
        id=task_id,
        topic=new.topic,
        name=new.name,
        status=Status.RUNNING,
        data=new.data,
        created_at=now,
        updated_at=now,
    )
