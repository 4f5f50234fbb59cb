"""The dashboard's routes: pages rendered from :mod:`~tenure.http.dashboard.pages`
with Jinja2, login and logout, and the actions (retry, cancel, in bulk).

Each page is the store read on a worker thread (the stores are synchronous),
then a template; a page that cannot be read says why in the page itself, with
the status a client expects (400 for a bad filter, 404 for no such task, 503
while the store is out of reach). Actions are POST forms that must carry the
session's CSRF token and come from this host; each answers with a redirect back
and a one-shot notice of what it did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from tenure.app import App
from tenure.errors import InvalidInput, InvalidTransition, StoreUnavailable, TaskNotFound
from tenure.http.dashboard import pages, views
from tenure.http.dashboard.live import Broadcaster
from tenure.http.dashboard.session import (
    FLASH,
    Session,
    Sessions,
    csrf_ok,
    safe_next,
    same_origin,
)

HERE = Path(__file__).parent
MAX_SELECTION = 500
"""Tasks one bulk action may name."""

Gather = Callable[[App], dict[str, Any]]


class Site:
    """The dashboard of one App, behind the API's token."""

    def __init__(self, app: App, token: str | None) -> None:
        self.app = app
        self.sessions = Sessions(token)
        self.templates = Jinja2Templates(directory=HERE / "templates")
        views.environment(self.templates.env)
        self.live = Broadcaster(lambda: app.events)
        self._opening = threading.Lock()

    def routes(self) -> list[BaseRoute]:
        """Every route of the dashboard, at the root of the server."""
        return [
            Route("/", self.overview, methods=["GET"]),
            Route("/tasks", self.tasks, methods=["GET", "POST"]),
            Route("/tasks/{id}", self.task, methods=["GET"]),
            Route("/tasks/{id}/{action:str}", self.act, methods=["POST"]),
            Route("/groups", self.simple(pages.groups, "groups.html"), methods=["GET"]),
            Route("/workers", self.simple(pages.workers, "workers.html"), methods=["GET"]),
            Route("/locks", self.simple(pages.locks, "locks.html"), methods=["GET"]),
            Route("/periodic", self.simple(pages.periodic, "periodic.html"), methods=["GET"]),
            Route("/reports", self.simple(pages.reports, "reports.html"), methods=["GET"]),
            Route("/live", self.stream, methods=["GET"]),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]

    # -- pages ----------------------------------------------------------------------

    def _read(self, gather: Gather) -> dict[str, Any]:
        with self._opening:  # the App opens its store on first use, once
            self.app.store  # noqa: B018
        return gather(self.app)

    async def render(self, request: Request, template: str, gather: Gather) -> Response:
        """``template`` filled by ``gather(app)``; the login page instead if the
        browser has no session; an error page if the store refuses."""
        session, cookie = self._session(request)
        if session is None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?{urlencode({'next': target})}", 303)
        status, context = 200, {}
        try:
            context = await run_in_threadpool(self._read, gather)
        except (InvalidInput, TaskNotFound, StoreUnavailable) as exc:
            template, status, context = "error.html", *_failure(exc)
        response = self._template(request, template, session, context, status)
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
        notice = None if live else unquote(request.cookies.get(FLASH, "")) or None
        context = {"session": session, "notice": notice, "open": self.sessions.open, **context}
        response = self.templates.TemplateResponse(request, name, context, status_code=status)
        response.headers["Cache-Control"] = "no-store"
        if notice is not None:
            response.delete_cookie(FLASH, path="/")
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
        return await self.render(request, "task.html", lambda app: pages.task(app, wanted))

    async def stream(self, request: Request) -> Response:
        if self._session(request)[0] is None:
            return Response("log in first", 401, media_type="text/plain")
        task_id = request.query_params.get("task") or None
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(
            self.live.stream(task_id), media_type="text/event-stream", headers=headers
        )

    # -- login ----------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        target = safe_next(request.query_params.get("next"))
        if self.sessions.open:
            return RedirectResponse(target, 303)
        if request.method == "GET":
            return self._template(request, "login.html", None, {"next": target})
        form = await request.form()
        target = safe_next(str(form.get("next") or "/"))
        given = form.get("token")
        if not same_origin(request) or not isinstance(given, str):
            return self._template(request, "login.html", None, {"next": target}, 403)
        if not self.sessions.token_matches(given.strip()):
            context = {"next": target, "failed": True}
            return self._template(request, "login.html", None, context, 401)
        _, cookie = self.sessions.new()
        response = RedirectResponse(target, 303)
        self.sessions.set_cookie(response, request, cookie)
        return response

    async def logout(self, request: Request) -> Response:
        refused = await self._refused(request)
        if refused is not None:
            return refused
        response = RedirectResponse("/login", 303)
        self.sessions.forget(response, request)
        return response

    # -- actions --------------------------------------------------------------------

    async def _refused(self, request: Request) -> Response | None:
        """A 403 page unless the POST carries its session's CSRF token and comes
        from this host."""
        session = self.sessions.of(request)
        form = await request.form()
        if session is None or not same_origin(request) or not csrf_ok(session, form):
            message = "This form has expired or did not come from this dashboard; reload the page."
            context = {"code": 403, "message": message}
            return self._template(request, "error.html", session, context, 403)
        return None

    async def act(self, request: Request) -> Response:
        """``POST /tasks/{id}/retry`` or ``/cancel``: one task, named by its whole id."""
        task_id, action = request.path_params["id"], request.path_params["action"]
        if action not in ("retry", "cancel"):
            return self._template(request, "error.html", None, _not_found(request), 404)
        return await self._apply(request, action, [task_id], f"/tasks/{quote(task_id, safe='')}")

    async def bulk(self, request: Request) -> Response:
        """``POST /tasks``: retry or cancel the tasks ticked on the page."""
        form = await request.form()
        action = str(form.get("action") or "")
        ids = [str(value) for value in form.getlist("id")][:MAX_SELECTION]
        if action not in ("retry", "cancel"):
            context = {"code": 400, "message": "Choose retry or cancel."}
            return self._template(request, "error.html", None, context, 400)
        return await self._apply(request, action, ids, safe_next(str(form.get("back") or "/tasks")))

    async def _apply(self, request: Request, action: str, ids: list[str], back: str) -> Response:
        refused = await self._refused(request)
        if refused is not None:
            return refused
        notice = await run_in_threadpool(self._change, action, ids)
        response = RedirectResponse(back, 303)
        response.set_cookie(FLASH, quote(notice), max_age=60, path="/", httponly=True,
                            samesite="strict")  # fmt: skip
        return response

    def _change(self, action: str, ids: list[str]) -> str:
        """Retry or cancel each task; what happened, in a sentence."""
        admin = self.app.tasks
        act = admin.retry if action == "retry" else admin.cancel
        changed = refused = 0
        for task_id in ids:
            try:
                act(task_id)
                changed += 1
            except (InvalidTransition, TaskNotFound, InvalidInput):
                refused += 1
        done = "Retried" if action == "retry" else "Cancelled"
        notice = f"{done} {changed} task{'s' * (changed != 1)}."
        if refused:
            notice += f" {refused} could not be: gone, or a status that does not allow it."
        return notice


def _failure(exc: Exception) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, InvalidInput):
        return 400, {"code": 400, "message": f"{exc.field}: {exc.message}"}
    if isinstance(exc, TaskNotFound):
        return 404, {"code": 404, "message": f"No task's id is or begins with {exc.task_id!r}."}
    return 503, {"code": 503, "message": "The store cannot be reached now; try again shortly."}


def _not_found(request: Request) -> dict[str, Any]:
    return {"code": 404, "message": f"Nothing at {request.url.path}."}
