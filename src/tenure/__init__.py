"""tenure: a durable task queue for Python whose leases can be trusted."""

from __future__ import annotations

from tenure.app import App
from tenure.control import Current, Retry, Snooze, current
from tenure.errors import (
    AlreadyDone,
    ConfigError,
    DuplicateTask,
    InvalidInput,
    InvalidTransition,
    LeaseError,
    LeaseExpired,
    LeaseLost,
    StoreError,
    StoreUnavailable,
    TaskCancelled,
    TaskFailed,
    TaskNotFound,
    TenureError,
    UniqueConflict,
    WrongOwner,
)
from tenure.hooks import Middleware, Outcome
from tenure.store import (
    Completion,
    Event,
    Failure,
    Lease,
    LockPhase,
    NewTask,
    OnConflict,
    Page,
    ReserveParams,
    Store,
    TaskFilter,
    TaskState,
    UniqueLock,
    UniqueRule,
    open_store,
)
from tenure.task import TRANSITIONS, Status, Task, TaskError
from tenure.unique import Unique

__version__ = "0.1.0"

__all__ = [
    "TRANSITIONS",
    "AlreadyDone",
    "App",
    "Completion",
    "ConfigError",
    "Current",
    "DuplicateTask",
    "Event",
    "Failure",
    "InvalidInput",
    "InvalidTransition",
    "Lease",
    "LeaseError",
    "LeaseExpired",
    "LeaseLost",
    "LockPhase",
    "Middleware",
    "NewTask",
    "OnConflict",
    "Outcome",
    "Page",
    "ReserveParams",
    "Retry",
    "Snooze",
    "Status",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskFailed",
    "TaskFilter",
    "TaskNotFound",
    "TaskState",
    "TenureError",
    "Unique",
    "UniqueConflict",
    "UniqueLock",
    "UniqueRule",
    "WrongOwner",
    "__version__",
    "current",
    "open_store",
]
