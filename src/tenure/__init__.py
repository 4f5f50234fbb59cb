"""tenure: a durable task queue for Python whose leases can be trusted.

What task authors use is here; what a store's writers pass across its boundary
(``NewTask``, ``Completion``, ``Failure``, ``ReserveParams``, ``TaskFilter`` …)
lives in :mod:`tenure.store`.
"""

from __future__ import annotations

from tenure.app import App
from tenure.control import Cancel, Current, Retry, Snooze, current
from tenure.errors import (
    AlreadyDone,
    AmbiguousId,
    ChainStopped,
    ConfigError,
    DuplicateTask,
    EventsPruned,
    InvalidInput,
    InvalidTransition,
    LeaseError,
    LeaseExpired,
    LeaseLost,
    ScheduleConflict,
    ScheduleExists,
    ScheduleNotFound,
    StoreError,
    StoreUnavailable,
    TaskCancelled,
    TaskFailed,
    TaskNotFound,
    TenureError,
    UniqueConflict,
    WrongOwner,
)
from tenure.flowhandles import ChainHandle, GroupHandle
from tenure.function import Call, TaskFunction
from tenure.handle import TaskHandle
from tenure.hooks import Middleware, Outcome
from tenure.limits import Limit
from tenure.retry import Backoff
from tenure.store import Event, Store, open_store
from tenure.task import (
    TRANSITIONS,
    Ended,
    Lease,
    LockPhase,
    OnConflict,
    Status,
    Task,
    TaskError,
)
from tenure.unique import Unique
from tenure.workflows import Chain, Group, Signature, group

__version__ = "0.1.0"

__all__ = [
    "TRANSITIONS",
    "AlreadyDone",
    "AmbiguousId",
    "App",
    "Backoff",
    "Call",
    "Cancel",
    "Chain",
    "ChainHandle",
    "ChainStopped",
    "ConfigError",
    "Current",
    "DuplicateTask",
    "Ended",
    "Event",
    "EventsPruned",
    "Group",
    "GroupHandle",
    "InvalidInput",
    "InvalidTransition",
    "Lease",
    "LeaseError",
    "LeaseExpired",
    "LeaseLost",
    "Limit",
    "LockPhase",
    "Middleware",
    "OnConflict",
    "Outcome",
    "Retry",
    "ScheduleConflict",
    "ScheduleExists",
    "ScheduleNotFound",
    "Signature",
    "Snooze",
    "Status",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskFailed",
    "TaskFunction",
    "TaskHandle",
    "TaskNotFound",
    "TenureError",
    "Unique",
    "UniqueConflict",
    "WrongOwner",
    "__version__",
    "current",
    "group",
    "open_store",
]

_MOVED_TO_STORE = frozenset(
    {
        "Completion",
        "Failure",
        "NewTask",
        "Page",
        "ReserveParams",
        "TaskFilter",
        "TaskState",
        "UniqueLock",
        "UniqueRule",
    }
)


def __getattr__(name: str) -> object:
    """The store's boundary types moved to :mod:`tenure.store`; the old names
    still work for a while, with a warning."""
    if name in _MOVED_TO_STORE:
        import warnings  # noqa: PLC0415 - only for the deprecated names

        import tenure.store  # noqa: PLC0415 - loaded already; named for clarity

        warnings.warn(
            f"tenure.{name} moved: import it from tenure.store",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(tenure.store, name)
    raise AttributeError(f"module 'tenure' has no attribute {name!r}")
