"""The routes of the HTTP API, each a thin translation of one
:class:`~tenure.admin.TaskAdmin` call (or one enqueue) into HTTP.

Store work runs in Starlette's thread pool: the stores are synchronous (a psycopg
pool, or a SQLite connection per thread), and the event loop must go on
answering while one request waits on the database. Reads take an id or a unique
prefix of one, as the command line does; ``retry`` and ``cancel`` take only a
whole id, so that a script can never change a task other than the one it named.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tenure.admin import TaskAdmin
from tenure.app import App
from tenure.checks import MAX_NAME_LENGTH
from tenure.errors import InvalidInput
from tenure.function import TaskFunction
from tenure.http import inputs, where
from tenure.http.inputs import ApiError, Param
from tenure.http.openapi import Signatures
from tenure.http.operations import OPERATIONS
from tenure.http.replies import reply
from tenure.http.schedules import ScheduleRoutes
from tenure.http.surface import BULK_FIELDS, MAX_BULK, OPTIONS, Operation
from tenure.http.topic_surface import (
    CONCURRENCY,
    EVERY_SECONDS,
    MAX_RUNNING,
    MAX_STARTS,
    MOST_STEPS,
    PER_SECONDS,
    TOPIC,
    WORKER,
)
from tenure.shapes import (
    ageing_json,
    event_json,
    lifted_json,
    limit_json,
    paused_json,
    rate_json,
    stats_json,
    task_json,
    worker_json,
)
from tenure.store import TaskFilter, TopicAgeing, TopicLimit, TopicRate
from tenure.task import Task

T = TypeVar("T")
Values = dict[str, Any]
"""A request's parameters, read and checked, by keyword
(:func:`~tenure.http.inputs.read_parameters`)."""
Handler = Callable[[Request, Values], Awaitable[Response]]


class Api(ScheduleRoutes):
    """The handlers of one App's API, one per operation of the table
    (:mod:`tenure.http.surface`), named as its ``handler`` says; each is given
    its parameters read and checked. :meth:`routes` serves them."""

    def __init__(
        self,
        app: App,
        describe: Callable[[Signatures], Mapping[str, Any]],
        operations: tuple[Operation, ...] = OPERATIONS,
    ) -> None:
        self.app = app
        self.describe = describe
        self.operations = operations
        self._described: tuple[tuple[str, ...], Mapping[str, Any]] | None = None

    def routes(self) -> list[Route]:
        """One route per path, its methods dispatched inside, so that a 405 names
        every method the path allows. Fixed paths come first: the router answers
        a 405 from the first route whose path matches, and ``/api/tasks/cancel``
        must not be taken for ``/api/tasks/{id}``, which allows only ``GET``."""
        paths: dict[str, dict[str, Operation]] = {}
        for operation in self.operations:
            paths.setdefault(operation.path, {})[operation.method] = operation
        fixed_first = sorted(paths, key=lambda path: "{" in path)
        return [
            Route(path, self._endpoint(paths[path]), methods=list(paths[path]))
            for path in fixed_first
        ]

    def _endpoint(
        self, operations: Mapping[str, Operation]
    ) -> Callable[[Request], Awaitable[Response]]:
        """The path's methods, each read as its operation declares, then answered
        by its handler (``HEAD`` as ``GET``)."""
        handlers: dict[str, Handler] = {
            method: getattr(self, operation.handler) for method, operation in operations.items()
        }

        async def endpoint(request: Request) -> Response:
            method = "GET" if request.method == "HEAD" else request.method
            operation = operations[method]
            values = inputs.read_parameters(
                operation.parameters, request.query_params, request.path_params
            )
            return await handlers[method](request, values)

        return endpoint

    async def _work(self, work: Callable[[TaskAdmin], T]) -> T:
        """``work(admin)`` on a worker thread, the store opened first if need be."""
        return await run_in_threadpool(lambda: work(self.app.tasks))

    async def get_openapi(self, request: Request, values: Values) -> Response:
        """The document, made again when the App's tasks have changed: it
        names each registered task and the arguments it takes."""
        names = tuple(self.app.registry)
        if self._described is None or self._described[0] != names:
            registered = self.app.registry.items()
            signatures = {name: inspect.signature(function.fn) for name, function in registered}
            self._described = (names, self.describe(signatures))
        return reply(self._described[1])

    async def list_tasks(self, request: Request, values: Values) -> Response:
        wanted = inputs.listing(values)
        page = await self._work(
            lambda admin: admin.page(
                wanted.filters,
                cursor=wanted.cursor,
                limit=wanted.limit,
                newest_first=wanted.newest_first,
            )
        )
        return reply({"tasks": [task_json(task) for task in page.tasks], "cursor": page.cursor})

    async def enqueue_task(self, request: Request, values: Values) -> Response:
        limit = inputs.ESCAPES * self.app.max_payload_bytes + inputs.ENVELOPE_BYTES
        wanted = inputs.enqueue_request(await inputs.json_body(request, limit), OPTIONS)
        if traced := inputs.trace_context(request.headers):  # the caller's trace goes on
            wanted.options["headers"] = traced
        try:
            function = self.app.lookup(wanted.name)
        except InvalidInput as unknown:
            raise ApiError(404, "name", unknown.message) from None
        check_keywords(function, wanted.kwargs)
        task = await self._work(lambda _: enqueue(function, wanted))
        location = f"{where.root(request.scope)}/api/tasks/{quote(task.id, safe='')}"
        return reply(task_json(task), 201, {"Location": location})

    async def get_task(self, request: Request, values: Values) -> Response:
        return reply(task_json(await self._work(lambda admin: admin.resolve(values["id"]))))

    async def list_task_events(self, request: Request, values: Values) -> Response:
        def history(admin: TaskAdmin) -> dict[str, object]:
            task = admin.resolve(values["id"])
            return {"task_id": task.id, "events": [event_json(e) for e in admin.history(task.id)]}

        return reply(await self._work(history))

    async def retry_task(self, request: Request, values: Values) -> Response:
        return reply(task_json(await self._work(lambda admin: admin.retry(values["id"]))))

    async def cancel_task(self, request: Request, values: Values) -> Response:
        return reply(task_json(await self._work(lambda admin: admin.cancel(values["id"]))))

    async def retry_tasks(self, request: Request, values: Values) -> Response:
        return await self._change_tasks(request, "retry")

    async def cancel_tasks(self, request: Request, values: Values) -> Response:
        return await self._change_tasks(request, "cancel")

    async def _change_tasks(self, request: Request, action: str) -> Response:
        """``POST /api/tasks/retry`` or ``/cancel``: the tasks of ``ids``, or
        those a ``filter`` matches (refused whole past :data:`MAX_BULK`)."""
        given = inputs.body_fields(await inputs.json_body(request, BULK_BYTES), BULK_FIELDS)
        if ("ids" in given) == ("filter" in given):
            raise InvalidInput("ids", "give the tasks' ids, or a filter, and not both")
        if "filter" in given and all(value is None for value in given["filter"].values()):
            raise InvalidInput("filter", "give at least one filter: none would match every task")
        dry_run = given.get("dry_run", False)

        def change(admin: TaskAdmin) -> dict[str, Any]:
            ids = given["ids"] if "ids" in given else _matched(admin, given["filter"])
            changed, refused = ([], []) if dry_run else admin.change_many(action, ids)
            return {
                "dry_run": dry_run,
                "matched": ids,
                "changed": [task_json(task) for task in changed],
                "refused": [{"id": task_id, "error": why} for task_id, why in refused],
            }

        return reply(await self._work(change))

    async def get_stats(self, request: Request, values: Values) -> Response:
        window = values["window"]
        figures = await self._work(lambda admin: (admin.stats(window=window), admin.workers()))
        return reply(stats_json(figures[0], len(figures[1])))

    async def list_paused_topics(self, request: Request, values: Values) -> Response:
        paused = await self._work(lambda admin: admin.paused())
        return reply({"paused": [paused_json(topic) for topic in paused]})

    async def pause_topic(self, request: Request, values: Values) -> Response:
        topic = await _topic_of(request)
        return reply(paused_json(await self._work(lambda admin: admin.pause(topic))))

    async def resume_topic(self, request: Request, values: Values) -> Response:
        topic = await _topic_of(request)
        resumed = await self._work(lambda admin: admin.resume(topic))
        return reply({"topic": topic, "resumed": resumed})

    async def list_topic_limits(self, request: Request, values: Values) -> Response:
        limits = await self._work(lambda admin: admin.limits())
        return reply({"limits": [limit_json(limit) for limit in limits]})

    async def limit_topic(self, request: Request, values: Values) -> Response:
        topic, given = await _setting(request, (MAX_RUNNING,), "limit")
        limit = await self._work(lambda admin: admin.limit(topic, given.get("max_running")))
        return reply(lifted_json(TopicLimit, topic) if limit is None else limit_json(limit))

    async def list_topic_rates(self, request: Request, values: Values) -> Response:
        rates = await self._work(lambda admin: admin.rate_limits())
        return reply({"rates": [rate_json(rate) for rate in rates]})

    async def rate_topic(self, request: Request, values: Values) -> Response:
        topic, given = await _setting(request, (MAX_STARTS, PER_SECONDS), "rate")
        most, per = given.get("max_starts"), given.get("per_seconds", 60.0)
        rate = await self._work(lambda admin: admin.rate_limit(topic, most, per))
        return reply(lifted_json(TopicRate, topic) if rate is None else rate_json(rate))

    async def list_topic_ageing(self, request: Request, values: Values) -> Response:
        ageings = await self._work(lambda admin: admin.ageings())
        return reply({"ageing": [ageing_json(ageing) for ageing in ageings]})

    async def ageing_topic(self, request: Request, values: Values) -> Response:
        topic, given = await _setting(request, (EVERY_SECONDS, MOST_STEPS), "ageing")
        every, most = given.get("every_seconds"), given.get("most", 10)
        ageing = await self._work(lambda admin: admin.ageing(topic, every, most))
        return reply(lifted_json(TopicAgeing, topic) if ageing is None else ageing_json(ageing))

    async def scale_worker(self, request: Request, values: Values) -> Response:
        body = await inputs.json_body(request, TOPIC_BYTES)
        given = inputs.body_fields(body, (WORKER, CONCURRENCY))
        for field in ("worker", "concurrency"):
            if field not in given:
                raise InvalidInput(field, "is required")
        worker, most = given["worker"], given["concurrency"]
        scaled = await self._work(lambda admin: admin.scale(worker, most))
        if scaled is None:
            raise ApiError(404, "worker", f"no live worker {worker!r}")
        return reply(worker_json(scaled))

    async def list_workers(self, request: Request, values: Values) -> Response:
        workers = await self._work(lambda admin: admin.workers())
        return reply({"workers": [worker_json(worker) for worker in workers]})


async def _topic_of(request: Request) -> str:
    """The topic a pause or a resume names in its body."""
    given = inputs.body_fields(await inputs.json_body(request, TOPIC_BYTES), (TOPIC,))
    if "topic" not in given:
        raise InvalidInput("topic", "is required")
    topic: str = given["topic"]
    return topic


async def _setting(
    request: Request, fields: tuple[Param, ...], what: str
) -> tuple[str, dict[str, Any]]:
    """The topic a change of its setting (``what``) names, and the setting's
    fields; the first is required, null lifting the setting."""
    body = await inputs.json_body(request, TOPIC_BYTES)
    given = inputs.body_fields(body, (TOPIC, *fields))
    if "topic" not in given:
        raise InvalidInput("topic", "is required")
    first = fields[0].name
    if first not in body:  # type: ignore[operator]  # read: an object
        raise InvalidInput(first, f"is required (null lifts the topic's {what})")
    return given["topic"], given


TOPIC_BYTES = 4096
"""Largest body of a pause or a resume: a topic (200 characters, escaped)."""

BULK_BYTES = MAX_BULK * (6 * MAX_NAME_LENGTH + 8) + 4096
"""Largest bulk body: as many ids as it may name, each at its longest, escaped."""


def _matched(admin: TaskAdmin, filters: dict[str, Any]) -> list[str]:
    """The ids of the tasks ``filters`` match, oldest first: at most
    :data:`MAX_BULK`, or none is changed."""
    found = admin.matching(TaskFilter(**filters), MAX_BULK)
    if found is None:
        raise InvalidInput(
            "filter", f"matches more than {MAX_BULK} tasks; narrow it (none changed)"
        )
    return [task.id for task in found]


def check_keywords(function: TaskFunction[Any, Any], kwargs: Mapping[str, Any]) -> None:
    """Name the keyword argument the function has no parameter for, as
    ``kwargs.<key>`` (binding the call would only say "args")."""
    parameters = inspect.signature(function.fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    keywords = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = {p.name for p in parameters if p.kind in keywords}
    for key in kwargs:
        if key not in named:
            raise InvalidInput(
                f"kwargs.{key}", f"{function.name} takes no keyword argument {key!r}"
            )


def enqueue(function: TaskFunction[Any, Any], wanted: inputs.Enqueue) -> Task:
    """Enqueue through the task's declaration (topic, retries, timeout, tags and
    uniqueness come from it), as ``function.options(...).enqueue(...)`` would."""
    try:
        handle = function.options(**wanted.options).enqueue(*wanted.args, **wanted.kwargs)
    except InvalidInput as exc:
        if exc.field == "data":  # the store measured args and kwargs together
            raise InvalidInput("body", f"args and kwargs: {exc.message}") from None
        raise
    if handle.rejected is not None:  # a unique task whose rule says reject
        raise handle.rejected
    if handle.task is None:  # pragma: no cover - enqueue returns the created task
        raise ApiError(500, None, "the store did not return the task it created")
    return handle.task
