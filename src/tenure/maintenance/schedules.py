"""``app.schedules``: periodic tasks added, edited, paused and removed at run
time, kept in the store beside those declared in code with ``@app.periodic``.

The elected scheduler reads them from the store on each step, so a schedule
added here (or with ``tenure periodic add``, or the API) starts within a step,
on whichever scheduler leads, without a deploy. Only a registered task can be
scheduled: a schedule names a task the App knows, with arguments that fit it.
A schedule declared in code can be paused and resumed here, not edited or
removed: the code is where it is changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from tenure import serializer
from tenure.errors import InvalidInput, ScheduleConflict, ScheduleNotFound
from tenure.function import TaskFunction
from tenure.maintenance.periodic import Periodic, PeriodicState, periodic_states, state_of
from tenure.registry import Registry
from tenure.store import Store, validate
from tenure.store.schedules import DEFAULT_CATCH_UP, Schedule, ScheduleSpec, check_spec
from tenure.timetable import Timetable, zone

UNSET: Any = object()
"""An edit's field left as it is."""


class Schedules:
    """The App's schedules: ``app.schedules``."""

    def __init__(
        self, store: Callable[[], Store], registry: Registry, periodics: list[Periodic]
    ) -> None:
        self._store = store
        self._registry = registry
        self._periodics = periodics

    def all(self) -> list[PeriodicState]:
        """Every schedule, declared in code or added at run time, by name, with
        its next and last ticks."""
        return periodic_states(self._periodics, self._store())

    def get(self, name: str) -> PeriodicState:
        """One schedule's state; ``ScheduleNotFound`` if there is none."""
        for state in self.all():
            if state.name == name:
                return state
        raise ScheduleNotFound(name)

    def add(
        self,
        name: str,
        task: str | TaskFunction[Any, Any],
        schedule: str | float,
        *,
        tz: str | None = None,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: dict[str, Any] | None = None,
        catch_up: float = DEFAULT_CATCH_UP,
    ) -> PeriodicState:
        """Enqueue ``task`` (a registered task or its name) with ``args`` and
        ``kwargs`` on ``schedule``: a cron expression read in ``tz`` or an
        interval in seconds. It starts from now. ``ScheduleExists`` if the name
        is taken in the store; ``ScheduleConflict`` if this App declares it in code."""
        if any(p.name == name for p in self._periodics):
            raise ScheduleConflict(name, "name", f"{name!r} is declared in code with @app.periodic")
        spec = ScheduleSpec(name, _name_of(task), schedule, tz, tuple(args), kwargs or {}, catch_up)
        return self._state(self._store().schedule_add(self._fitted(spec)))

    def edit(
        self,
        name: str,
        *,
        task: str | TaskFunction[Any, Any] = UNSET,
        schedule: str | float = UNSET,
        tz: str | None = UNSET,
        args: tuple[Any, ...] | list[Any] = UNSET,
        kwargs: dict[str, Any] = UNSET,
        catch_up: float = UNSET,
    ) -> PeriodicState:
        """Change what a schedule added at run time enqueues, or when; a new
        timing starts from now. Fields not given stay as they are, but the
        zone of a schedule given an interval, which has none. A field wrong in
        itself is ``InvalidInput``; one that does not fit the rest of the
        schedule as stored (an argument its task does not take), or a schedule
        declared in code, is ``ScheduleConflict``."""
        current = self._added(name)
        if tz is UNSET and schedule is not UNSET and not isinstance(schedule, str):
            tz = None
        changes = {"task": task if task is UNSET else _name_of(task), "schedule": schedule,
                   "tz": tz, "args": args if args is UNSET else tuple(args),
                   "kwargs": kwargs, "catch_up": catch_up}  # fmt: skip
        given: dict[str, Any] = {k: v for k, v in changes.items() if v is not UNSET}
        self._check_alone(given)
        try:
            spec = replace(current.spec, **given)
            # Arguments are fitted to the task when either changes (else they were when added).
            fitted = given.keys() & {"task", "args", "kwargs"}
            spec = self._fitted(spec) if fitted else check_spec(spec, "spec")
        except InvalidInput as misfit:
            field = misfit.field.removeprefix("spec.")
            message = f"{field}: {misfit.message}, with the rest of schedule {name!r} as stored"
            raise ScheduleConflict(name, field, message) from None
        return self._state(self._store().schedule_replace(spec))

    def _check_alone(self, given: dict[str, Any]) -> None:
        """Refuse an edit's field that is wrong whatever the schedule holds."""
        if "schedule" in given:
            Timetable(given["schedule"], given.get("tz"))
        elif given.get("tz") is not None:
            zone(given["tz"])
        if "task" in given:
            self._lookup(given["task"])
        for field in ("args", "kwargs"):
            if field in given:
                serializer.dumps(given[field], field)
        if "catch_up" in given:
            validate.seconds(given["catch_up"], "catch_up", allow_zero=True)

    def pause(self, name: str) -> PeriodicState:
        """Stop enqueuing ``name``'s ticks until it is resumed."""
        return self._paused(name, True)

    def resume(self, name: str) -> PeriodicState:
        """Enqueue ``name``'s ticks again, from now: the ticks it missed while
        paused are not enqueued."""
        return self._paused(name, False)

    def _paused(self, name: str, paused: bool) -> PeriodicState:
        store = self._store()
        declared = [p.spec for p in self._periodics if p.name == name]
        if declared and store.schedule_get(name) is None:  # no scheduler has led yet
            store.schedule_declare(declared)
        return self._state(store.schedule_pause(name, paused))

    def remove(self, name: str) -> None:
        """Delete a schedule added at run time, or one stored from code that
        the code no longer declares; ``ScheduleNotFound`` if none."""
        if any(p.name == name for p in self._periodics):
            raise ScheduleConflict(name, "name", f"{name!r} is declared in code: remove it there")
        if not self._store().schedule_remove(name):
            raise ScheduleNotFound(name)

    def _state(self, schedule: Schedule) -> PeriodicState:
        declared = schedule.origin == "store" or any(
            p.name == schedule.name for p in self._periodics
        )
        return state_of(schedule, declared, self._store().clock_now())

    def _added(self, name: str) -> Schedule:
        """The schedule ``name``, which must have been added at run time (an
        edit of one from code would last until a scheduler stores it again)."""
        found = self._store().schedule_get(name)
        if found is None:
            raise ScheduleNotFound(name)
        if found.origin == "code":
            raise ScheduleConflict(
                name, "name", f"{name!r} is declared in code: change it there (it can be paused)"
            )
        return found

    def _fitted(self, spec: ScheduleSpec) -> ScheduleSpec:
        """``spec``, checked whole, once its task is known to be registered and
        its arguments to fit the task's signature."""
        check_spec(spec, "spec")
        self._lookup(spec.task).new_task(tuple(spec.args), dict(spec.kwargs))
        return spec

    def _lookup(self, task: str) -> TaskFunction[Any, Any]:
        try:
            return self._registry.lookup(task)
        except InvalidInput as unknown:
            raise InvalidInput("task", unknown.message) from None


def _name_of(task: object) -> str:
    if isinstance(task, TaskFunction):
        return task.name
    if not isinstance(task, str):
        raise InvalidInput("task", "must be a registered task or its name")
    return task


def schedule_json(state: PeriodicState) -> dict[str, Any]:
    """A schedule as ``tenure periodic --json`` and the API show it."""
    spec = state.spec
    cron = spec.schedule if isinstance(spec.schedule, str) else None
    return {
        "name": spec.name,
        "task": spec.task,
        "cron": cron,
        "every": None if cron is not None else spec.schedule,
        "tz": spec.tz,
        "describe": spec.timetable.describe(),
        "args": list(spec.args),
        "kwargs": spec.kwargs,
        "catch_up": spec.catch_up,
        "origin": state.origin,
        "declared": state.declared,
        "paused": state.paused,
        "next_tick": _iso(state.next_tick),
        "last_tick": _iso(state.last_tick),
        "last_task_id": state.last_task_id,
    }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
