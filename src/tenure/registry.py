"""The tasks an App declared, and what running them needs: the one thing the worker,
its pools and their child processes know of the App.

A :class:`Registry` maps each registered name to its function and carries the
settings that travel with execution (the payload limit, the hooks, the
middleware, the ``module:attribute`` path that finds it again in a pool child).
Lower layers take a Registry, never the App, so the App stays the one place that
wires the store, the registry, the worker and the scheduler together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenure.errors import ConfigError, InvalidInput
from tenure.hooks import Hooks, Middleware
from tenure.retry import Backoff
from tenure.store import DEFAULT_MAX_PAYLOAD_BYTES

if TYPE_CHECKING:
    from tenure.function import TaskFunction


class Registry(dict[str, "TaskFunction[Any, Any]"]):
    """Registered task functions by name; only these run."""

    def __init__(self, *, max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> None:
        super().__init__()
        self.max_payload_bytes = max_payload_bytes
        self.hooks = Hooks()
        self.middleware: list[Middleware] = []
        self.import_path: str | None = None
        """``module:attribute`` that finds this registry's App again (pool children
        import it)."""

    def add(self, function: TaskFunction[Any, Any]) -> None:
        if function.name in self:
            raise ConfigError(f"a task named {function.name!r} is registered already")
        self[function.name] = function

    def lookup(self, name: str) -> TaskFunction[Any, Any]:
        """The function called ``name``; an unknown name is refused, naming the known."""
        try:
            return self[name]
        except KeyError:
            known = ", ".join(sorted(self)) or "none"
            raise InvalidInput(
                "name", f"no task named {name!r} is registered (known: {known})"
            ) from None

    def topics(self) -> list[str]:
        """The topics of the registered tasks, sorted."""
        return sorted({function.config.topic for function in self.values()})

    def backoff_of(self, name: str) -> Backoff:
        """How task ``name`` waits between attempts (the default for an unknown one)."""
        function = self.get(name)
        return Backoff() if function is None else function.config.backoff

    def retries_timeout(self, name: str) -> bool:
        """Whether task ``name`` is retried after running past its timeout (its
        ``retry_on`` takes a timeout for ``TimeoutError``)."""
        function = self.get(name)
        return function is None or function.config.retries_on(TimeoutError)

    def __repr__(self) -> str:
        return f"<Registry of {len(self)} tasks>"
