"""The public API is pinned: adding or removing a name is a deliberate change."""

from __future__ import annotations

import tenure
import tenure.store
from tenure.errors import LeaseError, TenureError


def test_exported_names_are_pinned() -> None:
    """What task authors use, at the top; a store's boundary types in tenure.store."""
    assert sorted(tenure.__all__) == sorted(
        [
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
    )
    for name in tenure.__all__:
        assert getattr(tenure, name) is not None


def test_the_store_boundary_types_are_in_tenure_store() -> None:
    for name in (
        "Completion",
        "Failure",
        "NewTask",
        "Page",
        "ReserveParams",
        "TaskFilter",
        "TaskState",
        "TopicAgeing",
        "TopicLimit",
        "TopicRate",
        "UniqueLock",
        "UniqueRule",
        "Lease",
        "Store",
        "open_store",
    ):
        assert name in tenure.store.__all__
        assert getattr(tenure.store, name) is not None


def test_control_flow_signals_are_not_errors() -> None:
    assert not issubclass(tenure.Snooze, tenure.TenureError)
    assert not issubclass(tenure.Retry, tenure.TenureError)
    assert not issubclass(tenure.Cancel, tenure.TenureError)


def test_every_error_derives_from_tenure_error() -> None:
    errors = [
        getattr(tenure, name)
        for name in tenure.__all__
        if isinstance(getattr(tenure, name), type) and issubclass(getattr(tenure, name), Exception)
    ]
    assert len(errors) >= 12
    control = (tenure.Snooze, tenure.Retry, tenure.Cancel)
    assert all(issubclass(error, TenureError) for error in errors if error not in control)
    for lease_error in (tenure.WrongOwner, tenure.LeaseExpired, tenure.LeaseLost):
        assert issubclass(lease_error, LeaseError)
    assert issubclass(tenure.AlreadyDone, tenure.InvalidTransition)
    assert issubclass(tenure.AmbiguousId, tenure.InvalidInput)  # the command line's exit 2


def test_status_is_a_string_enum() -> None:
    assert tenure.Status.DONE == "done"
    assert tenure.Status("snoozed") is tenure.Status.SNOOZED
    assert [s.value for s in tenure.Status] == [
        "waiting",
        "pending",
        "running",
        "snoozed",
        "done",
        "failed",
        "cancelled",
    ]


def test_done_is_final_and_every_status_has_a_row() -> None:
    assert set(tenure.TRANSITIONS) == set(tenure.Status)
    assert tenure.TRANSITIONS[tenure.Status.DONE] == frozenset()


def test_the_moved_names_still_work_with_a_warning() -> None:
    import pytest

    with pytest.warns(DeprecationWarning, match="import it from tenure.store"):
        moved = tenure.NewTask  # type: ignore[attr-defined]
    assert moved is tenure.store.NewTask
    with pytest.raises(AttributeError):
        tenure.NoSuchName  # type: ignore[attr-defined]  # noqa: B018


def test_the_payload_limit_is_one_value_for_the_store_and_the_worker() -> None:
    app = tenure.App("sqlite:///:memory:", max_payload_bytes=1000)
    app.max_payload_bytes = 100
    assert app.registry.max_payload_bytes == 100
