"""Stores: where tasks live. :func:`open_store` picks one from a URL."""

from __future__ import annotations

from tenure.store.base import DEFAULT_MAX_PAYLOAD_BYTES, Store
from tenure.store.flowcontrol import PausedTopic, TopicAgeing, TopicLimit, TopicRate
from tenure.store.schedules import Schedule, ScheduleSpec
from tenure.store.types import (
    Completion,
    Event,
    Failure,
    Gate,
    NewGate,
    NewTask,
    Page,
    ReserveParams,
    StateOutcome,
    TaskFilter,
    TaskState,
    UniqueLock,
)
from tenure.store.url import DEFAULT_URL, open_store, resolve_url
from tenure.task import GateMode, GateShape, Lease, LockPhase, OnConflict, UniqueRule

__all__ = [
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "DEFAULT_URL",
    "Completion",
    "Event",
    "Failure",
    "Gate",
    "GateMode",
    "GateShape",
    "Lease",
    "LockPhase",
    "NewGate",
    "NewTask",
    "OnConflict",
    "Page",
    "PausedTopic",
    "ReserveParams",
    "Schedule",
    "ScheduleSpec",
    "StateOutcome",
    "Store",
    "TaskFilter",
    "TaskState",
    "TopicAgeing",
    "TopicLimit",
    "TopicRate",
    "UniqueLock",
    "UniqueRule",
    "open_store",
    "resolve_url",
]
