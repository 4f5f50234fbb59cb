"""How a task is declared (``@app.task(...)``): the :class:`TaskConfig` a
function's declaration makes, checked once when the App registers it. Its own
module so that what a declaration means is read in one place, apart from how a
declared task is enqueued (:mod:`tenure.function`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from tenure.checks import seconds as check_seconds
from tenure.errors import InvalidInput
from tenure.limits import Limit
from tenure.retry import Backoff
from tenure.unique import Unique


@dataclass(frozen=True, slots=True)
class TaskConfig:
    """How a task is declared (``@app.task(...)``): where it goes and how it is
    retried."""

    name: str
    """What workers find the function by."""
    topic: str = "default"
    """The queue its tasks go to; workers reserve from the topics they serve."""
    sub_topic: str = "default"
    """A finer label within the topic (a tenant, a customer), filterable."""
    retries: int = 0
    """How many times a failed attempt is tried again: at most ``retries + 1`` runs."""
    timeout: float | None = None
    """Seconds after which an attempt is abandoned and counted as a failed one."""
    expires: float | None = None
    """Seconds after enqueue (the store's clock) by which a task must start: one
    that has not is never started, and ends cancelled (its error ``Expired``)."""
    priority: int = 0
    """Higher runs first among ready tasks of the topic."""
    tags: frozenset[str] = frozenset()
    """Labels stored with each task, for finding them."""
    backoff: Backoff = field(default_factory=Backoff)
    """The wait between tries, and the priority each retry loses
    (``backoff.priority_step``)."""
    unique: Unique | None = None
    """Makes identical tasks exclusive (:class:`~tenure.Unique`)."""
    retry_on: tuple[type[BaseException], ...] | None = None
    """The exceptions worth another attempt (subclasses too); any other fails the
    task at once, whatever ``retries`` allows. ``None``: every exception. A
    worker's timeout counts as ``TimeoutError``; ``tenure.Retry`` always retries."""
    concurrency: Limit | None = None
    """At most so many of its tasks with one key run at once (:class:`~tenure.Limit`)."""
    ordered_by: Callable[..., Any] | None = None
    """A function of its arguments giving a key: the tasks of one key run one
    at a time, in enqueue order, a retry keeping its place (``None``: no key)."""
    fair_key: Callable[..., Any] | None = None
    """A function of its arguments giving a key (a tenant): reservations take
    the tasks of a priority in turns between keys, so that one key's backlog
    delays another's task by a turn each, not by the whole backlog."""

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise InvalidInput("retries", f"must be a whole number, zero or more: {self.retries!r}")
        if self.timeout is not None:
            check_seconds(self.timeout, "timeout")
        if self.expires is not None:
            check_seconds(self.expires, "expires")
        if self.unique is not None and not isinstance(self.unique, Unique):
            raise InvalidInput("unique", "must be a tenure.Unique")
        if self.retry_on is not None and not (
            isinstance(self.retry_on, tuple)
            and all(isinstance(c, type) and issubclass(c, BaseException) for c in self.retry_on)
        ):
            raise InvalidInput("retry_on", "must be a tuple of exception classes")
        if self.concurrency is not None and not isinstance(self.concurrency, Limit):
            raise InvalidInput("concurrency", "must be a tenure.Limit")
        for keyed in ("ordered_by", "fair_key"):
            if getattr(self, keyed) is not None and not callable(getattr(self, keyed)):
                raise InvalidInput(keyed, "must be a function of the task's arguments")

    def retries_on(self, error: type[BaseException]) -> bool:
        """Whether an attempt that raised ``error`` may be tried again."""
        return self.retry_on is None or issubclass(error, self.retry_on)


class Declaration(TypedDict, total=False):
    """The keyword arguments of :meth:`tenure.App.task`, one for each field of
    :class:`TaskConfig` (whose defaults they take): ``name`` defaults to the
    function's module and qualified name, ``tags`` may be any set, no
    ``backoff`` means the default :class:`~tenure.Backoff`, and ``retry_on``
    may be one exception class."""

    name: str | None
    topic: str
    sub_topic: str
    retries: int
    timeout: float | None
    expires: float | None
    priority: int
    tags: set[str] | frozenset[str]
    backoff: Backoff | None
    unique: Unique | None
    retry_on: tuple[type[BaseException], ...] | type[BaseException] | None
    concurrency: Limit | None
    ordered_by: Callable[..., Any] | None
    fair_key: Callable[..., Any] | None


def declare(function: Callable[..., Any], declared: Declaration) -> TaskConfig:
    """The :class:`TaskConfig` of ``function`` declared with ``declared``; an
    argument that is not a field is refused as Python refuses one."""
    unknown = sorted(declared.keys() - TaskConfig.__dataclass_fields__.keys())
    if unknown:
        raise TypeError(f"App.task() got an unexpected keyword argument {unknown[0]!r}")
    values: dict[str, Any] = {**declared}
    values["name"] = declared.get("name") or f"{function.__module__}.{function.__qualname__}"
    values["tags"] = frozenset(declared.get("tags", ()))
    values["backoff"] = declared.get("backoff") or Backoff()
    retry_on = declared.get("retry_on")
    if isinstance(retry_on, type):
        values["retry_on"] = (retry_on,)
    return TaskConfig(**values)
