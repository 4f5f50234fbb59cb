"""The HTTP API's schedules: list them, add one at run time, edit, pause,
resume and remove it, through ``app.schedules``
(:class:`~tenure.maintenance.schedules.Schedules`), as ``tenure periodic``
does. The routes are declared in :data:`tenure.http.surface.SCHEDULES`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from tenure.app import App
from tenure.errors import InvalidInput
from tenure.http import inputs, where
from tenure.http.replies import reply
from tenure.http.surface import NAME, PAUSED, SCHEDULE_FIELDS
from tenure.maintenance.periodic import PeriodicState
from tenure.maintenance.schedules import UNSET, Schedules, schedule_json

T = TypeVar("T")

BODY_BYTES = 256 * 1024
"""Largest schedule body: its arguments (64 KiB of JSON each) and the rest."""


class ScheduleRoutes:
    """Mixed into :class:`~tenure.http.routes.Api`: the schedules' handlers."""

    app: App

    async def _schedules(self, work: Callable[[Schedules], T]) -> T:
        return await run_in_threadpool(lambda: work(self.app.schedules))

    async def list_schedules(self, request: Request, values: Mapping[str, Any]) -> Response:
        states = await self._schedules(lambda schedules: schedules.all())
        return reply({"schedules": [schedule_json(state) for state in states]})

    async def add_schedule(self, request: Request, values: Mapping[str, Any]) -> Response:
        body = await inputs.json_body(request, BODY_BYTES)
        given = inputs.body_fields(body, (NAME, *SCHEDULE_FIELDS))
        for required in ("name", "task"):
            if required not in given:
                raise InvalidInput(required, "is required")
        timing = _timing(given)
        if timing is UNSET:
            raise InvalidInput("cron", "give a cron expression, or an interval as every")
        state = await self._schedules(
            lambda schedules: schedules.add(given.pop("name"), given.pop("task"), timing, **given)
        )
        location = f"{where.root(request.scope)}/api/schedules/{quote(state.name, safe='')}"
        return reply(schedule_json(state), 201, {"Location": location})

    async def get_schedule(self, request: Request, values: Mapping[str, Any]) -> Response:
        name = values["name"]
        return reply(schedule_json(await self._schedules(lambda s: s.get(name))))

    async def edit_schedule(self, request: Request, values: Mapping[str, Any]) -> Response:
        name = values["name"]
        body = await inputs.json_body(request, BODY_BYTES)
        given = inputs.body_fields(body, (*SCHEDULE_FIELDS, PAUSED))
        paused, timing = given.pop("paused", None), _timing(given)
        if timing is not UNSET:
            given["schedule"] = timing

        def edit(schedules: Schedules) -> PeriodicState:
            changed = {key: value for key, value in given.items() if value is not UNSET}
            state = schedules.edit(name, **changed) if changed else schedules.get(name)
            if paused is not None and paused != state.paused:
                state = schedules.pause(name) if paused else schedules.resume(name)
            return state

        return reply(schedule_json(await self._schedules(edit)))

    async def remove_schedule(self, request: Request, values: Mapping[str, Any]) -> Response:
        name = values["name"]
        await self._schedules(lambda schedules: schedules.remove(name))
        return reply({"name": name, "removed": True})


def _timing(given: dict[str, Any]) -> Any:
    """The ``cron`` or ``every`` a body gives (taken out of ``given``), or
    :data:`UNSET`; both is a mistake."""
    cron, every = given.pop("cron", None), given.pop("every", None)
    if cron is not None and every is not None:
        raise InvalidInput("every", "give a cron expression or an interval, not both")
    return cron if cron is not None else every if every is not None else UNSET
