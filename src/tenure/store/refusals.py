"""Why a write changed nothing: the one place every backend asks.

A store's conditional writes (a holder's complete, an admin's cancel, a unique
lock at enqueue or at start) match no row when their precondition no longer
holds. The backend then reads the task as it is now and asks here which error
explains the miss, so SQLite and PostgreSQL refuse the same situations with the
same errors, in the same order of checks.
"""

from __future__ import annotations

from collections.abc import Sequence

from tenure.errors import (
    AlreadyDone,
    InvalidTransition,
    LeaseExpired,
    LeaseLost,
    TaskNotFound,
    TenureError,
    UniqueConflict,
    WrongOwner,
)
from tenure.store.types import PreparedTask, StateOutcome, TaskState
from tenure.task import Lease, Status, Task, TaskError

Answer = Task | TaskState | TenureError
"""What a backend's holder write answers per item: the whole task when asked for
it (a single write), else its state (a batch), or the refusal."""

LOST_ERROR = TaskError(
    "LeaseExpired",
    "the lease was revoked: its holder stopped extending it, and no attempt was left",
)
"""The error a task ends with when its last attempt's holder vanished."""


NO_TRANSACTION = (
    "has no transaction open: the task's ending would commit on its own, apart "
    "from the work it belongs with (begin one first)"
)
"""Why a task's ending is refused on a caller's connection outside a transaction."""


def refusal(task: Task | None, lease: Lease, target: Status) -> TenureError:
    """Why a holder's write of ``lease`` towards ``target`` changed nothing.

    Called by every backend after its conditional write matched no row, with the
    task as it is now. The order of the checks is the contract:
    a missing task, then a lease that is no longer the task's (revoked, or
    replaced by a newer reservation, even by the same owner), then an owner that
    does not match the lease, then the status table.
    """
    if task is None:
        return TaskNotFound(lease.task_id)
    if task.lease_token is None or task.lease_token != lease.token:
        return LeaseLost(task.id, f"lease {lease.token} was revoked or replaced")
    if task.assignee != lease.owner:
        return WrongOwner(task.id, f"lease {lease.token} is held by {task.assignee!r}")
    if task.status is Status.DONE:
        return AlreadyDone(task.id, task.status, target)
    if task.status is not Status.RUNNING:
        return InvalidTransition(task.id, task.status, target)
    return LeaseExpired(task.id, f"lease {lease.token} expired at {task.lease_expires_at}")


def admin_refusal(task: Task | None, task_id: str, target: Status) -> TenureError:
    """Why a cancel or retry of ``task_id`` changed nothing."""
    if task is None:
        return TaskNotFound(task_id)
    if task.status is Status.DONE:
        return AlreadyDone(task.id, task.status, target)
    return InvalidTransition(task.id, task.status, target)


def unique_conflict(conflicts: Sequence[tuple[int, str, str | None]]) -> UniqueConflict:
    """The error of a batch whose items ``conflicts`` (index, key, holder) found
    their unique locks held."""
    _, key, holder = conflicts[0]
    return UniqueConflict(key, holder, conflicts=tuple(conflicts))


def unique_start_error(holder: str | None) -> TaskError:
    """What a task refused at start by its unique lock records as its error."""
    held_by = "another task" if holder is None else f"task {holder}"
    return TaskError("UniqueConflict", f"its unique lock is held by {held_by}", "")


def refuse_shared_locks(tasks: Sequence[PreparedTask]) -> None:
    """Two items of one batch that would take the same lock at enqueue: the
    later ones conflict with the first (the store never sees both)."""
    first: dict[str, str] = {}
    conflicts: list[tuple[int, str, str | None]] = []
    for index, task in enumerate(tasks):
        if task.unique is None or not task.locks_at_enqueue:
            continue
        holder = first.setdefault(task.unique.key, task.id)
        if holder != task.id:
            conflicts.append((index, task.unique.key, holder))
    if conflicts:
        raise unique_conflict(conflicts)


def raise_if_refused(outcome: Answer) -> Task:
    """The task a single write answered with, or its refusal raised."""
    if isinstance(outcome, TenureError):
        raise outcome
    if not isinstance(outcome, Task):
        raise TypeError("the store answered a single write with the state, not the task")
    return outcome


def briefly(outcomes: Sequence[Answer]) -> list[StateOutcome]:
    """Batch answers as states (a backend may answer with whole tasks)."""
    return [TaskState.of(o) if isinstance(o, Task) else o for o in outcomes]
