"""Schedules kept in the store, a part of :class:`~tenure.store.Store`: the
periodic tasks declared in code and those added at run time, each with the
newest tick it enqueued.

The tick lives in the store, not in a scheduler's memory, and moves in the
transaction that enqueues its task, by a compare-and-set: of two schedulers
that race (a deposed leader that has not noticed yet), one enqueues the tick,
and a failover resumes from the last tick the store saw rather than from a
guess. A schedule starts from the moment it is first stored, so a first start
enqueues nothing from before it.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from tenure import serializer
from tenure.errors import DuplicateTask, InvalidInput, ScheduleNotFound, UniqueConflict
from tenure.store import validate
from tenure.store.backend import Backend
from tenure.store.types import NewTask, PreparedTask
from tenure.task import Task
from tenure.timetable import Timetable

Origin = Literal["code", "store"]
"""Where a schedule comes from: declared in code (``@app.periodic``, stored by
the elected scheduler) or added at run time (``app.schedules``, the command
line, the API)."""

DEFAULT_CATCH_UP = 600.0
"""Seconds of missed ticks a scheduler enqueues when it resumes after a gap (a
failover, a deploy): ticks older than this are skipped, not replayed."""

MAX_ARGUMENTS_BYTES = 64 * 1024
"""Largest JSON of a schedule's ``args``, and of its ``kwargs``: they are copied
into every tick's task."""


@dataclass(frozen=True)
class ScheduleSpec:
    """What a schedule enqueues and when: the task ``task`` (a registered name)
    with ``args`` and ``kwargs``, on a cron expression read in ``tz`` or every
    N seconds; ``catch_up`` seconds of missed ticks are enqueued after a gap."""

    name: str
    task: str
    schedule: str | float
    tz: str | None = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    catch_up: float = DEFAULT_CATCH_UP

    @property
    def timetable(self) -> Timetable:
        return Timetable(self.schedule, self.tz)


@dataclass(frozen=True)
class Schedule:
    """A stored schedule: its spec, where it comes from, whether it is paused,
    and the newest tick it enqueued (or, before its first, when it was stored)."""

    spec: ScheduleSpec
    origin: Origin
    paused_at: datetime | None
    last_tick: datetime
    last_task_id: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def paused(self) -> bool:
        return self.paused_at is not None


class Schedules(Backend):
    """The store's schedules (a part of :class:`~tenure.store.Store`)."""

    @abstractmethod
    def _prepare_many(self, tasks: Sequence[NewTask], now: datetime | None) -> list[PreparedTask]:
        """``tasks`` checked and encoded (the store's, as every create does it)."""

    def schedule_declare(
        self, specs: Sequence[ScheduleSpec], *, now: datetime | None = None
    ) -> None:
        """Store the schedules declared in code: a new one starts from now; one
        stored already takes the spec (and starts again from now if its timing
        changed). A name taken by a schedule added at run time is left alone."""
        checked = [check_spec(spec, f"specs[{n}]") for n, spec in enumerate(specs)]
        names = [spec.name for spec in checked]
        if len(set(names)) != len(names):
            raise InvalidInput("specs", "two schedules have the same name")
        if checked:
            self._schedule_declare(checked, validate.moment(now, "now"))

    def schedule_add(self, spec: ScheduleSpec, *, now: datetime | None = None) -> Schedule:
        """Add a schedule at run time, starting from now. Raises
        :class:`~tenure.errors.ScheduleExists` if the name is taken."""
        return self._schedule_add(check_spec(spec, "spec"), validate.moment(now, "now"))

    def schedule_replace(self, spec: ScheduleSpec, *, now: datetime | None = None) -> Schedule:
        """Give the schedule ``spec.name``, added at run time, this spec; if
        its timing changed it starts again from now. Raises ``ScheduleNotFound``
        (one stored from code is not found: the code changes it)."""
        checked = check_spec(spec, "spec")
        found = self._schedule_replace(checked, validate.moment(now, "now"))
        if found is None:
            raise ScheduleNotFound(checked.name)
        return found

    def schedule_pause(
        self, name: str, paused: bool = True, *, now: datetime | None = None
    ) -> Schedule:
        """Pause the schedule ``name`` (no tick is enqueued while it is), or
        resume it (``paused=False``) from now: the ticks it missed while
        paused are not enqueued. Raises ``ScheduleNotFound``."""
        if not isinstance(paused, bool):
            raise InvalidInput("paused", "must be true or false")
        found = self._schedule_pause(check_name(name), paused, validate.moment(now, "now"))
        if found is None:
            raise ScheduleNotFound(name)
        return found

    def schedule_remove(self, name: str) -> bool:
        """Delete the schedule ``name``; whether there was one. (A schedule
        still declared in code is stored again by the next scheduler.)"""
        return self._schedule_remove(check_name(name))

    def schedule_get(self, name: str) -> Schedule | None:
        return self._schedule_get(check_name(name))

    def schedule_list(self) -> list[Schedule]:
        """Every stored schedule, by name."""
        return self._schedule_list()

    def schedule_tick(
        self, name: str, tick: datetime, task: NewTask, *, now: datetime | None = None
    ) -> Task | None:
        """Enqueue ``task`` for the tick ``tick`` of schedule ``name``, in the
        transaction that moves its last tick there, if the schedule is not
        paused and its last tick is older; else nothing (``None``). A task the
        store refuses (its id exists, or its unique lock is held) spends the
        tick without enqueuing it."""
        name, tick = check_name(name), _required(tick, "tick")
        [prepared] = self._prepare_many([task], validate.moment(now, "now"))
        try:
            with self._schedule_advance(name, tick, prepared.id) as connection:
                if connection is None:
                    return None
                return self._task_create_many([prepared], now, connection)[0]
        except (DuplicateTask, UniqueConflict):
            with self._schedule_advance(name, tick, None):
                return None

    @abstractmethod
    def _schedule_declare(self, specs: list[ScheduleSpec], now: datetime | None) -> None: ...

    @abstractmethod
    def _schedule_add(self, spec: ScheduleSpec, now: datetime | None) -> Schedule: ...

    @abstractmethod
    def _schedule_replace(self, spec: ScheduleSpec, now: datetime | None) -> Schedule | None: ...

    @abstractmethod
    def _schedule_pause(self, name: str, paused: bool, now: datetime | None) -> Schedule | None: ...

    @abstractmethod
    def _schedule_remove(self, name: str) -> bool: ...

    @abstractmethod
    def _schedule_get(self, name: str) -> Schedule | None: ...

    @abstractmethod
    def _schedule_list(self) -> list[Schedule]: ...

    @abstractmethod
    def _schedule_advance(
        self, name: str, tick: datetime, task_id: str | None
    ) -> AbstractContextManager[Any]:
        """A transaction in which schedule ``name``'s last tick moved to
        ``tick`` (and its last task to ``task_id``, unless ``None``): it gives
        the transaction's connection, for the tick's task to be written on, or
        ``None`` when the tick did not move (paused, gone, or not newer)."""


NAME_PATTERN = (
    "^[^/\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029"
    "\\u202f\\u205f\\u3000\\ufeff]+$"
)
"""What a schedule's name may hold: no slash, no space of any kind, no control
character. The characters are listed, not named by ``\\s``, which Python's and
JSON Schema's regular expressions read unlike; the HTTP API's document states
this very pattern."""
_NAME = re.compile(NAME_PATTERN[1:-1])


def check_name(name: object, where: str = "name") -> str:
    """A schedule's name: it becomes part of its tasks' ids and of URLs, so no
    slash, space or control character."""
    checked = validate.text(name, where)
    if not _NAME.fullmatch(checked):
        raise InvalidInput(where, "may not hold a slash, a space or a control character")
    return checked


def check_spec(spec: object, where: str) -> ScheduleSpec:
    """``spec`` checked whole, before anything is written."""
    if not isinstance(spec, ScheduleSpec):
        raise InvalidInput(where, "must be a ScheduleSpec")
    check_name(spec.name, f"{where}.name")
    validate.text(spec.task, f"{where}.task")
    try:
        spec.timetable  # noqa: B018 (refuses a bad expression, interval or zone)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}.{exc.field}", exc.message) from None
    if not isinstance(spec.args, tuple | list):
        raise InvalidInput(f"{where}.args", "must be a list")
    if not isinstance(spec.kwargs, dict):
        raise InvalidInput(f"{where}.kwargs", "must be an object")
    serializer.dumps(list(spec.args), f"{where}.args", MAX_ARGUMENTS_BYTES)
    serializer.dumps(spec.kwargs, f"{where}.kwargs", MAX_ARGUMENTS_BYTES)
    validate.seconds(spec.catch_up, f"{where}.catch_up", allow_zero=True)
    return spec


def spec_params(spec: ScheduleSpec) -> dict[str, Any]:
    """A spec as the columns of its row (times are the dialect's to add)."""
    cron = spec.schedule if isinstance(spec.schedule, str) else None
    return {
        "name": spec.name,
        "task": spec.task,
        "cron": cron,
        "every": None if cron is not None else float(spec.schedule),
        "tz": spec.tz,
        "args": str(serializer.dumps(list(spec.args), "args")),
        "kwargs": str(serializer.dumps(spec.kwargs, "kwargs")),
        "catch_up": float(spec.catch_up),
    }


def spec_of(row: Any, args: Any, kwargs: Any) -> ScheduleSpec:
    """The spec a row holds, given its decoded arguments."""
    schedule = row["cron"] if row["cron"] is not None else float(row["every"])
    return ScheduleSpec(
        row["name"],
        row["task"],
        schedule,
        row["tz"],
        tuple(args),
        dict(kwargs),
        float(row["catch_up"]),
    )


def _required(value: object, where: str) -> datetime:
    moment = validate.moment(value, where)
    if moment is None:
        raise InvalidInput(where, "a time is required")
    return moment
