"""Every error tenure raises, as one tree rooted at :class:`TenureError`.

Catch ``TenureError`` to handle anything tenure reports; catch a leaf to handle
one case. The tree::

    TenureError
    ├── InvalidInput            bad input at a boundary; nothing was written
    ├── TaskNotFound            no task with that id
    ├── DuplicateTask           a task with that id exists already
    ├── ScheduleNotFound        no schedule with that name
    ├── ScheduleExists          a schedule with that name exists already
    ├── InvalidTransition       the status table forbids the change asked for
    │   └── AlreadyDone         the task is done; done is final
    ├── LeaseError              a lease holder's write was refused; nothing changed
    │   ├── WrongOwner          the lease named belongs to another owner
    │   ├── LeaseExpired        the lease ran out before it was extended
    │   └── LeaseLost           the lease was revoked or replaced by a newer one
    ├── TaskFailed              a task waited on ended failed (carries the task)
    ├── TaskCancelled           a task waited on ended cancelled (carries the task)
    ├── UniqueConflict          a unique task's lock is held by another task
    ├── EventsPruned            a follower's cursor points into pruned history
    ├── StoreError              the store failed (driver error, bad schema, bad URL)
    │   └── StoreUnavailable    the store cannot be reached now; try again later
    └── ConfigError             tenure was set up wrongly

Control flow signals raised *inside* task code (snooze, retry) are not errors and
live apart from this tree.
"""

from __future__ import annotations

from typing import Any


class TenureError(Exception):
    """Base of every error tenure raises."""


class InvalidInput(TenureError, ValueError):
    """Input rejected at a boundary; ``field`` names what was wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class AmbiguousId(InvalidInput):
    """An id prefix that begins more than one task's id: give more of it."""

    def __init__(self, prefix: str) -> None:
        super().__init__("task_id", f"{prefix!r} begins more than one task's id")
        self.prefix = prefix


class TaskNotFound(TenureError, LookupError):
    """No task has the given id (or, looked up by a prefix, begins with it)."""

    def __init__(self, task_id: str, where: str | None = None, *, prefix: bool = False) -> None:
        what = "no task's id is or begins with" if prefix else "no task with id"
        super().__init__(f"{what} {task_id!r}" + (f" in {where}" if where else ""))
        self.task_id = task_id


class DuplicateTask(TenureError):
    """A task with the given id exists already; creating it again changes nothing."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"a task with id {task_id!r} exists already")
        self.task_id = task_id


class ScheduleNotFound(TenureError, LookupError):
    """No schedule has the given name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no schedule named {name!r}")
        self.name = name


class ScheduleExists(TenureError):
    """A schedule with the given name exists already (added at run time, or
    declared in code); adding it again changes nothing."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a schedule named {name!r} exists already")
        self.name = name


class ScheduleConflict(TenureError):
    """A change the schedule as stored refuses: one declared in code, changed
    or removed at run time, or a change that does not fit the rest of it (an
    argument its task does not take, a time zone for an interval). ``field``
    names what was given."""

    def __init__(self, name: str, field: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.field = field
        self.message = message


class InvalidTransition(TenureError):
    """The status table does not allow moving the task to the requested status."""

    def __init__(self, task_id: str, from_status: str, to_status: str) -> None:
        super().__init__(f"task {task_id!r} cannot go from {from_status} to {to_status}")
        self.task_id = task_id
        self.from_status = from_status
        self.to_status = to_status


class AlreadyDone(InvalidTransition):
    """The task is done, and done is final."""


class LeaseError(TenureError):
    """A write by a lease holder was refused and changed nothing."""

    def __init__(self, task_id: str, message: str) -> None:
        super().__init__(f"task {task_id!r}: {message}")
        self.task_id = task_id


class WrongOwner(LeaseError):
    """The lease named is held by another owner."""


class LeaseExpired(LeaseError):
    """The lease ran out before this extension; stop working on the task."""


class LeaseLost(LeaseError):
    """The lease was revoked or replaced; the holder must abandon the task."""


class TaskFailed(TenureError):
    """The task ended failed; ``task.error`` says why."""

    def __init__(self, task: Any) -> None:
        error = task.error
        reason = "no error recorded" if error is None else f"{error.type}: {error.message}"
        super().__init__(f"task {task.id} failed: {reason}")
        self.task = task


class TaskCancelled(TenureError):
    """The task ended cancelled."""

    def __init__(self, task: Any) -> None:
        super().__init__(f"task {task.id} was cancelled")
        self.task = task


class ChainStopped(TenureError):
    """A task of a chain failed or was cancelled, and the tasks after it were
    cancelled; ``task`` is the one where it stopped, its ``error`` says why."""

    def __init__(self, task: Any) -> None:
        error = task.error
        reason = "" if error is None else f": {error.type}: {error.message}"
        super().__init__(
            f"the chain stopped at task {task.id} ({task.name}), {task.status}{reason}"
        )
        self.task = task


class UniqueConflict(TenureError):
    """A unique task's lock is held by another task (``holder``, when known).

    ``conflicts`` lists every item of the batch refused for it, as
    ``(index, key, holder)``; nothing of the batch was written.
    """

    def __init__(
        self,
        key: str,
        holder: str | None,
        *,
        conflicts: tuple[tuple[int, str, str | None], ...] = (),
    ) -> None:
        held_by = "another task" if holder is None else f"task {holder!r}"
        super().__init__(f"unique lock {key[:16]}… is held by {held_by}")
        self.key = key
        self.holder = holder
        self.conflicts = conflicts or ((0, key, holder),)


class EventsPruned(TenureError):
    """The event log after a follower's cursor was partly deleted by retention:
    resuming from it would silently skip events. Start again from the beginning
    of what is kept (``after=None``), reconciling from the tasks themselves."""

    def __init__(self, cursor: str, pruned_to: str) -> None:
        super().__init__(
            f"events after cursor {cursor} were deleted by retention (pruned up to "
            f"{pruned_to}); following from it would skip them: start from the oldest "
            "event kept instead (no cursor)"
        )
        self.cursor = cursor
        self.pruned_to = pruned_to


class StoreError(TenureError):
    """The store failed to carry out an operation."""


class StoreUnavailable(StoreError):
    """The store cannot be reached now; the operation may be tried again."""


class ConfigError(TenureError):
    """tenure was configured wrongly (unknown URL scheme, bad option)."""
