"""What a worker can serve: the tasks of its App that it can never take, said
at start-up (a task on a topic the worker does not serve, or one that requires
tags the worker lacks waits for another worker, and nothing else tells why).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tenure.function import TaskFunction


def untakeable(
    functions: Iterable[TaskFunction[Any, Any]], topics: list[str], tags: frozenset[str]
) -> list[str]:
    """Why each of ``functions`` can never run on a worker of ``topics`` and
    ``tags`` (tags are requirements: a task runs only where every one is)."""
    found = []
    for function in sorted(functions, key=lambda f: f.name):
        config = function.config
        if config.topic not in topics:
            found.append(
                f"task {config.name} (topic {config.topic!r}) never runs on this worker, "
                f"which serves topics {','.join(topics)}: add it to --topics, or run "
                "another worker for it"
            )
        elif missing := sorted(config.tags - tags):
            found.append(
                f"task {config.name} requires tags {','.join(missing)} that this worker "
                f"lacks: it waits for a worker started with --tags {','.join(sorted(config.tags))}"
            )
    return found
