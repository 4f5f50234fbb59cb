"""The dashboard's routes: pages rendered from :mod:`~tenure.http.dashboard.pages`
with Jinja2, login and logout, and the actions (retry, cancel, in bulk).

Each page is the store read on a worker thread (the stores are synchronous),
then a template. Actions are POST forms (read within the bounds of
:mod:`~tenure.http.dashboard.actions`) that must carry the session's CSRF token
and come from this host; each answers with a redirect back and a one-shot
notice of what it did. A page that cannot be read, and any other failure on
the dashboard's paths, is an HTML page that says why (:meth:`Site.error_page`),
with the status the API gives the same error (:mod:`tenure.http.refusals`: 422
for a bad filter, 404 for no such task, 503 while the store is out of reach),
answered by the server's handlers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from tenure.admin import TaskAdmin
from tenure.app import App
from tenure.errors import InvalidInput, ScheduleNotFound
from tenure.events import Events
from tenure.http.dashboard import actions, pages, views
from tenure.http.dashboard.actions import ACTIONS, Outcome, read_form
from tenure.http.dashboard.live import Broadcaster, EventStream
from tenure.http.dashboard.session import (
    FLASH,
    Session,
    Sessions,
    cookie_scope,
    csrf_ok,
    root,
    safe_next,
    same_origin,
)

HERE = Path(__file__).parent

Gather = Callable[[App], dict[str, Any]]


class Site:
    """The dashboard of one App, behind the API's token."""

    def __init__(self, app: App, token: str | None, read_token: str | None = None) -> None:
        self.app = app
        self.sessions = Sessions(token, read_token)
        self.templates = Jinja2Templates(directory=HERE / "templates", context_processors=[_where])
        views.environment(self.templates.env)
        self.live = Broadcaster(self._events)

    def routes(self) -> list[BaseRoute]:
        """Every route of the dashboard, at the root of the server. A task's id
        may hold ``/`` (ids are the user's to choose): its routes take the rest
        of the path."""
        return [
            Route("/", self.overview, methods=["GET"]),
            Route("/tasks", self.tasks, methods=["GET", "POST"]),
            Route("/tasks/{id:path}", self.task, methods=["GET"]),
            Route("/tasks/{id:path}/{action}", self.act, methods=["POST"]),
            Route("/groups", self.simple(pages.groups, "groups.html"), methods=["GET"]),
            Route("/workers", self.simple(pages.workers, "workers.html"), methods=["GET"]),
            Route("/locks", self.simple(pages.locks, "locks.html"), methods=["GET"]),
            Route("/periodic", self.simple(pages.periodic, "periodic.html"), methods=["GET"]),
            Route("/periodic/{name}/{action}", self.schedule, methods=["POST"]),
            Route("/topics/{topic:path}/{action}", self.topic, methods=["POST"]),
            Route("/workers/{worker:path}/scale", self.scale, methods=["POST"]),
            Route("/reports", self.simple(pages.reports, "reports.html"), methods=["GET"]),
            Route("/live", self.stream, methods=["GET"]),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]

    # -- the store ------------------------------------------------------------------

    def _events(self) -> Events:
        return self.app.events

    def _admin(self) -> TaskAdmin:
        return self.app.tasks

    # -- pages ----------------------------------------------------------------------

    async def render(self, request: Request, template: str, gather: Gather) -> Response:
        """``template`` filled by ``gather(app)``; the login page instead if the
        browser has no session. What the store refuses reaches the server's
        handlers, which answer the dashboard's paths with :meth:`error_page`."""
        session, cookie = self._session(request)
        if session is None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"{root(request)}/login?{urlencode({'next': target})}", 303)
        context = await run_in_threadpool(lambda: gather(self.app))
        response = self._template(request, template, session, context)
        if cookie is not None:
            self.sessions.set_cookie(response, request, cookie)
        return response

    def _template(
        self, request: Request, name: str, session: Session | None, context: dict[str, Any],
        status: int = 200,
    ) -> Response:  # fmt: skip
        # A live refresh (the page's script re-reading itself) leaves the notice
        # for the page the browser is navigating to.
        live = "x-tenure-live" in request.headers
        told = None if live else request.cookies.get(FLASH)
        outcome = None if told is None else Outcome.of_cookie(told)
        notice = None if outcome is None else outcome.notice()
        context = {"session": session, "notice": notice, "open": self.sessions.open, **context}
        response = self.templates.TemplateResponse(request, name, context, status_code=status)
        response.headers["Cache-Control"] = "no-store"
        if told is not None:
            response.delete_cookie(FLASH, **cookie_scope(request))
        return response

    def error_page(
        self, request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> Response:
        """A page that says why a request to the dashboard failed, for a person."""
        context = {"code": status, "message": message}
        response = self._template(request, "error.html", self.sessions.of(request), context, status)
        response.headers.update(headers or {})
        return response

    def _session(self, request: Request) -> tuple[Session | None, str | None]:
        """The request's session, and a cookie to set when one is made for it
        (only without a token: then there is nobody to log in)."""
        session = self.sessions.of(request)
        if session is None and self.sessions.open:
            session, cookie = self.sessions.new()
            return session, cookie
        return session, None

    def simple(self, gather: Gather, template: str) -> Callable[[Request], Any]:
        """A page without parameters."""

        async def page(request: Request) -> Response:
            return await self.render(request, template, gather)

        return page

    async def overview(self, request: Request) -> Response:
        return await self.render(request, "overview.html", pages.overview)

    async def tasks(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.bulk(request)
        query = request.query_params
        return await self.render(
            request, "tasks.html", lambda app: pages.tasks(app, pages.listing(query))
        )

    async def task(self, request: Request) -> Response:
        wanted = request.path_params["id"]
        if not wanted:
            return RedirectResponse(f"{root(request)}/tasks", 303)
        return await self.render(request, "task.html", lambda app: pages.task(app, wanted))

    async def stream(self, request: Request) -> Response:
        if self._session(request)[0] is None:
            return Response("log in first", 401, media_type="text/plain")
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        if request.method == "HEAD":  # no body: no stream held open for minutes
            return Response(media_type="text/event-stream", headers=headers)
        task_id = request.query_params.get("task") or None
        return EventStream(self.live.stream(task_id), headers)

    # -- login ----------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        target = safe_next(request.query_params.get("next"), root(request))
        if self.sessions.open:
            return RedirectResponse(target, 303)
        if request.method == "GET":
            return self._template(request, "login.html", None, {"next": target})
        form = await read_form(request)
        target = safe_next(str(form.get("next") or ""), root(request))
        given = form.get("token")
        if not same_origin(request) or not isinstance(given, str):
            return self._template(request, "login.html", None, {"next": target}, 403)
        role = self.sessions.role_of(given.strip())
        if role is None:
            context = {"next": target, "failed": True}
            return self._template(request, "login.html", None, context, 401)
        _, cookie = self.sessions.new(role)
        response = RedirectResponse(target, 303)
        self.sessions.set_cookie(response, request, cookie)
        return response

    async def logout(self, request: Request) -> Response:
        form = await read_form(request)
        refused = self._refused(request, form, acting=False)
        if refused is not None:
            return refused
        response = RedirectResponse(f"{root(request)}/login", 303)
        self.sessions.forget(response, request)
        return response

    # -- actions --------------------------------------------------------------------

    def _refused(self, request: Request, form: FormData, *, acting: bool = True) -> Response | None:
        """A 403 page unless the POST carries its session's CSRF token and comes
        from this host, and, when it ``acting`` on the queue, unless the session
        may act (it logged in with the operator's token, not the read-only one)."""
        session = self.sessions.of(request)
        if session is None or not same_origin(request) or not csrf_ok(session, form):
            message = "This form has expired or did not come from this dashboard; reload the page."
        elif acting and not session.can_act:
            message = (
                "This session can only look: it logged in with the read-only token. "
                "Log in with the operator's token to retry or cancel tasks."
            )
        else:
            return None
        context = {"code": 403, "message": message}
        return self._template(request, "error.html", session, context, 403)

    async def act(self, request: Request) -> Response:
        """``POST /tasks/{id}/retry`` or ``/cancel``: one task, named by its whole id."""
        task_id, action = request.path_params["id"], request.path_params["action"]
        if action not in ACTIONS:
            message = f"Nothing at {request.url.path}."
            return self.error_page(request, 404, message)
        form = await read_form(request)
        refused = self._refused(request, form)
        if refused is not None:
            return refused
        back = f"{root(request)}/tasks/{quote(task_id, safe='')}"
        return await self._apply(request, action, [task_id], back)

    async def schedule(self, request: Request) -> Response:
        """``POST /periodic/{name}/pause`` or ``/resume``: one schedule."""
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in ("pause", "resume"):
            return self.error_page(request, 404, f"Nothing at {request.url.path}.")
        refused = self._refused(request, await read_form(request))
        if refused is not None:
            return refused
        schedules = self.app.schedules
        try:
            await run_in_threadpool(
                schedules.pause if action == "pause" else schedules.resume, name
            )
        except ScheduleNotFound as missing:
            return self.error_page(request, 404, f"{missing}.")
        except InvalidInput as refused:
            return self.error_page(request, 400, f"{refused}.")
        return RedirectResponse(f"{root(request)}/periodic", 303)

    async def topic(self, request: Request) -> Response:
        """``POST /topics/{topic}/pause`` or ``/resume``: one topic, for every
        worker that shares the store."""
        topic, action = request.path_params["topic"], request.path_params["action"]
        if action not in ("pause", "resume"):
            return self.error_page(request, 404, f"Nothing at {request.url.path}.")
        refused = self._refused(request, await read_form(request))
        if refused is not None:
            return refused
        admin = self._admin()
        try:
            await run_in_threadpool(admin.pause if action == "pause" else admin.resume, topic)
        except InvalidInput as wrong:
            return self.error_page(request, 400, f"{wrong}.")
        return RedirectResponse(f"{root(request)}/", 303)

    async def scale(self, request: Request) -> Response:
        """``POST /workers/{id}/scale``: the concurrency a running worker takes
        at its next heartbeat."""
        form = await read_form(request)
        refused = self._refused(request, form)
        if refused is not None:
            return refused
        worker, given = request.path_params["worker"], str(form.get("concurrency") or "")
        if not given.isdigit() or not 1 <= int(given) < 2**31:
            return self.error_page(request, 400, "A concurrency is a whole number, one or more.")
        scaled = await run_in_threadpool(self._admin().scale, worker, int(given))
        if scaled is None:
            return self.error_page(request, 404, f"No live worker {worker}.")
        return RedirectResponse(f"{root(request)}/workers", 303)

    async def bulk(self, request: Request) -> Response:
        """``POST /tasks``: retry or cancel the tasks ticked on the page, at
        most :data:`~tenure.http.dashboard.actions.MAX_SELECTION`."""
        form = await read_form(request)
        refused = self._refused(request, form)
        if refused is not None:
            return refused
        action = str(form.get("action") or "")
        if action not in ACTIONS:
            return self.error_page(request, 400, "Choose retry or cancel.")
        ids = actions.selection(form)
        back = safe_next(str(form.get("back") or f"{root(request)}/tasks"), root(request))
        return await self._apply(request, action, ids, back)

    async def _apply(self, request: Request, action: str, ids: list[str], back: str) -> Response:
        """Do ``action`` to ``ids`` (the form checked), then back to ``back``
        with the notice of what was done."""
        outcome = await run_in_threadpool(actions.apply, self._admin, action, ids)
        response = RedirectResponse(back, 303)
        response.set_cookie(FLASH, outcome.cookie(), max_age=60, **cookie_scope(request))
        return response


def _where(request: Request) -> dict[str, Any]:
    """What every template is given about where the dashboard is served."""
    return {"root": root(request)}
