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
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tenure.admin import TaskAdmin
from tenure.app import App
from tenure.errors import InvalidInput
from tenure.function import TaskFunction
from tenure.http import inputs
from tenure.http.inputs import ApiError
from tenure.shapes import event_json, stats_json, task_json, worker_json
from tenure.store.operating import DEFAULT_WINDOW
from tenure.task import Task

T = TypeVar("T")

NO_STORE = {"Cache-Control": "no-store"}
"""Every answer is the queue as it is now, and may carry task data: never cached."""


def reply(
    content: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A JSON answer, never cached."""
    return JSONResponse(content, status, headers={**NO_STORE, **(headers or {})})


class Api:
    """The handlers of one App's API; :meth:`routes` lists them."""

    def __init__(self, app: App, document: Mapping[str, Any]) -> None:
        self.app = app
        self.document = document

    def routes(self) -> list[Route]:
        """One route per path, its methods dispatched inside, so that a 405 names
        every method the path allows."""
        return [
            Route("/api/openapi.json", self.openapi, methods=["GET"]),
            Route("/api/tasks", self.tasks, methods=["GET", "POST"]),
            Route("/api/tasks/{id}", self.task, methods=["GET"]),
            Route("/api/tasks/{id}/events", self.events, methods=["GET"]),
            Route("/api/tasks/{id}/retry", self.retry, methods=["POST"]),
            Route("/api/tasks/{id}/cancel", self.cancel, methods=["POST"]),
            Route("/api/stats", self.stats, methods=["GET"]),
            Route("/api/workers", self.workers, methods=["GET"]),
        ]

    async def _work(self, work: Callable[[TaskAdmin], T]) -> T:
        """``work(admin)`` on a worker thread, the store opened first if need be."""
        return await run_in_threadpool(lambda: work(self.app.tasks))

    async def openapi(self, request: Request) -> JSONResponse:
        inputs.query(request.query_params)
        return reply(self.document)

    async def tasks(self, request: Request) -> JSONResponse:
        if request.method == "POST":
            return await self._enqueue(request)
        wanted = inputs.listing(inputs.query(request.query_params, inputs.LIST_PARAMETERS))
        page = await self._work(
            lambda admin: admin.page(
                wanted.filters,
                cursor=wanted.cursor,
                limit=wanted.limit,
                newest_first=wanted.newest_first,
            )
        )
        return reply({"tasks": [task_json(task) for task in page.tasks], "cursor": page.cursor})

    async def _enqueue(self, request: Request) -> JSONResponse:
        inputs.query(request.query_params)
        limit = inputs.ESCAPES * self.app.max_payload_bytes + inputs.ENVELOPE_BYTES
        wanted = inputs.enqueue_request(await inputs.json_body(request, limit))
        try:
            function = self.app.lookup(wanted.name)
        except InvalidInput as unknown:
            raise ApiError(404, "name", unknown.message) from None
        check_keywords(function, wanted.kwargs)
        task = await self._work(lambda _: enqueue(function, wanted))
        root = request.scope.get("root_path", "")
        location = f"{root}/api/tasks/{quote(task.id, safe='')}"
        return reply(task_json(task), 201, {"Location": location})

    async def task(self, request: Request) -> JSONResponse:
        inputs.query(request.query_params)
        wanted = request.path_params["id"]
        return reply(task_json(await self._work(lambda admin: resolve(admin, wanted))))

    async def events(self, request: Request) -> JSONResponse:
        inputs.query(request.query_params)
        wanted = request.path_params["id"]

        def history(admin: TaskAdmin) -> dict[str, object]:
            task = resolve(admin, wanted)
            return {"task_id": task.id, "events": [event_json(e) for e in admin.history(task.id)]}

        return reply(await self._work(history))

    async def retry(self, request: Request) -> JSONResponse:
        inputs.query(request.query_params)
        wanted = request.path_params["id"]
        return reply(task_json(await self._work(lambda admin: change(admin.retry, wanted))))

    async def cancel(self, request: Request) -> JSONResponse:
        inputs.query(request.query_params)
        wanted = request.path_params["id"]
        return reply(task_json(await self._work(lambda admin: change(admin.cancel, wanted))))

    async def stats(self, request: Request) -> JSONResponse:
        window = inputs.window(inputs.query(request.query_params, ("window",)), DEFAULT_WINDOW)
        figures = await self._work(lambda admin: (admin.stats(window=window), admin.workers()))
        return reply(stats_json(figures[0], len(figures[1])))

    async def workers(self, request: Request) -> JSONResponse:
        inputs.query(request.query_params)
        workers = await self._work(lambda admin: admin.workers())
        return reply({"workers": [worker_json(worker) for worker in workers]})


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


def resolve(admin: TaskAdmin, id_or_prefix: str) -> Task:
    """The task an id, or the one id a prefix begins, names: ``TaskNotFound``
    if none (404), ``AmbiguousId`` if the prefix begins several ids (409: it
    named one task once, maybe); :mod:`~tenure.http.refusals` says how."""
    inputs.task_id(id_or_prefix)
    return admin.resolve(id_or_prefix)


def change(act: Callable[[str], Task], task_id: str) -> Task:
    """Retry or cancel the task ``task_id`` (a whole id): ``TaskNotFound`` if
    there is none (404), ``InvalidTransition`` if its status refuses (409)."""
    inputs.task_id(task_id)
    return act(task_id)
