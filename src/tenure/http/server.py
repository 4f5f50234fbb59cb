"""The ASGI application: routes, the bearer token in front of all of them, and
one JSON error shape for everything that is not a success.

Bad input is always a 4xx naming the field; the store out of reach is a 503
with ``Retry-After``; anything else that fails is a 500 whose details go to the
log (``tenure.http``), not to the client. The API and the metrics answer so in
JSON; the dashboard's paths (everything else, when the dashboard is served)
answer with an HTML page that says the same, for a person in a browser.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import re
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from prometheus_client.exposition import choose_encoder
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure.app import App
from tenure.errors import ConfigError, StoreUnavailable, TenureError
from tenure.http.dashboard import Site
from tenure.http.inputs import ApiError
from tenure.http.openapi import document
from tenure.http.refusals import error_json, refusal
from tenure.http.replies import reply
from tenure.http.routes import Api
from tenure.http.where import Rooted, root, route_path
from tenure.metrics import store_registry

log = logging.getLogger("tenure.http")

MIN_TOKEN_LENGTH = 16


def create_app(
    app: App,
    *,
    token: str | None,
    insecure: bool = False,
    dashboard: bool = True,
    read_token: str | None = None,
) -> Starlette:
    """The HTTP API of ``app``'s store and tasks under ``/api``, its Prometheus
    figures at ``/metrics``, and (unless ``dashboard=False``) the web dashboard
    at ``/``.

    Every API request must carry ``Authorization: Bearer <token>``, unless
    ``insecure`` (then ``token`` must be ``None``): a queue's API enqueues and
    cancels work, and is never meant to be open by accident. The dashboard asks
    for the same token once, at its login page. The token is at least 16
    visible ASCII characters (``secrets.token_urlsafe()`` makes one). Without a
    token, only requests addressed to a loopback name (``Host``) are answered,
    so that a web page elsewhere cannot reach the server through a name it
    controls that resolves to 127.0.0.1.

    ``read_token`` (as long, and another) lets its bearer read everything, the
    API's ``GET`` routes, the metrics and every dashboard page, and change
    nothing: for the people and tools that watch the queue.
    """
    expected = _checked_token(token, insecure)
    reader = _checked_read_token(read_token, expected)
    middleware = [Middleware(Rooted), Middleware(SecurityHeaders)]
    if expected is None:
        middleware.append(Middleware(LoopbackOnly))
    else:
        middleware.append(Middleware(BearerAuth, token=expected, read_token=reader))
    api = Api(app, lambda signatures: document(secured=expected is not None, signatures=signatures))
    routes: list[BaseRoute] = [*api.routes(), metrics_route(app)]
    site = Site(app, expected, reader) if dashboard else None
    if site is not None:
        routes += site.routes()
    answers = Answers(site)
    served_app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={
            ApiError: _api_error,
            TenureError: answers.tenure_error,
            HTTPException: answers.http_error,
            Exception: answers.unexpected,
        },
    )
    served_app.state.end_streams = site.live.close if site is not None else lambda: None
    return served_app


def end_streams(served_app: Starlette) -> None:
    """End the dashboard's open streams of live updates, from any thread: what a
    server that begins to stop does, so that it need not wait them out."""
    end: Callable[[], None] | None = getattr(served_app.state, "end_streams", None)
    if end is not None:
        end()


def metrics_route(app: App) -> Route:
    """``GET /metrics``: the store's figures, read at scrape time
    (:mod:`tenure.metrics`), behind the same token as the API: in the
    OpenMetrics format when the scraper's ``Accept`` asks for it (Prometheus
    does), else in Prometheus's text format, as a worker's own port answers."""
    registry = store_registry(lambda: app.store)

    async def metrics(request: Request) -> Response:
        encode, media_type = choose_encoder(request.headers.get("accept", ""))
        body = await run_in_threadpool(encode, registry)
        return Response(body, media_type=media_type)

    return Route("/metrics", metrics, methods=["GET"])


def _checked_read_token(read_token: str | None, token: str | None) -> str | None:
    if read_token is None:
        return None
    if token is None:
        raise ConfigError("a read-only token needs an operator token beside it")
    checked = _checked_token(read_token, insecure=False)
    if checked == token:
        raise ConfigError("the read-only token must not be the operator's token")
    return checked


def _checked_token(token: str | None, insecure: bool) -> str | None:
    if insecure:
        if token is not None:
            raise ConfigError("give a token, or insecure=True, not both")
        return None
    if token is None:
        raise ConfigError("the HTTP API needs a token, unless insecure=True")
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(f"the API token must be at least {MIN_TOKEN_LENGTH} characters")
    if not all("!" <= char <= "~" for char in token):
        # Said without the token: error messages end up in logs.
        raise ConfigError("the API token must be visible ASCII characters, without spaces")
    return token


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


_HOST = re.compile(r"(?:\[(?P<literal>[0-9a-f:.]+)\]|(?P<name>[0-9a-z.-]+))(?::[0-9]{1,5})?")


def loopback_host(host: str | None) -> bool:
    """Whether a ``Host`` header names this machine only: ``localhost`` (also
    written with its final dot), an address of 127.0.0.0/8, or ``[::1]``, with
    or without a port. Names that a resolver could answer otherwise are not."""
    found = _HOST.fullmatch((host or "").lower())
    if found is None:
        return False
    name, literal = found["name"], found["literal"]
    if name in ("localhost", "localhost."):
        return True
    try:
        address = ipaddress.ip_address(name or literal)
    except ValueError:  # a host name: it may resolve to anything
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return False  # ::ffff:127.0.0.1 is loopback from Python 3.13 on; never here
    return address.is_loopback and (address.version == 6) == (literal is not None)


class LoopbackOnly:
    """Without a token: refuses (400) every request whose ``Host`` is not a
    loopback name (:func:`loopback_host`), so that a page of another site cannot
    reach the server through a name of its own that resolves to 127.0.0.1
    (DNS rebinding); and (403) every request but a read that a browser says
    comes from a page of another origin (``Origin``), so that a page the
    developer visits cannot have the browser retry or cancel a task through
    the API (a POST without a body needs no permission from this server)."""

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        refusal: Response | None = None
        if not loopback_host(host):
            refusal = PlainTextResponse("Invalid host header", status_code=400)
        elif scope.get("method", "GET") not in self.SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and urlsplit(origin).netloc.lower() != (host or "").lower():
                message = f"a request from a page of {origin} is refused"
                refusal = JSONResponse(error_json("Origin", message), 403)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


class SecurityHeaders:
    """Headers on every answer that keep a browser from running, framing or
    sniffing anything this server did not mean: a strict Content-Security-Policy
    (scripts and styles from this server only, no inline ones), no framing, no
    MIME sniffing, no referrer to other sites."""

    HEADERS: tuple[tuple[bytes, bytes], ...] = (
        (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"same-origin"),
    )

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


class BearerAuth:
    """Refuses every request to the API and the metrics without
    ``Authorization: Bearer <token>``: 401 with ``WWW-Authenticate: Bearer``.
    With the read-only token, only reading is allowed (``GET``, ``HEAD``,
    ``OPTIONS``): 403 for anything else. The dashboard's pages check their own
    session instead (a browser sends a cookie, not a header). Tokens are
    compared as digests with :func:`hmac.compare_digest`, so the comparison
    takes the same time whatever the client sent, even its length. Nothing here
    logs."""

    def __init__(self, app: ASGIApp, token: str, read_token: str | None = None) -> None:
        self.app = app
        self._expected = _digest(token.encode())
        self._reader = None if read_token is None else _digest(read_token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not guarded(scope):
            await self.app(scope, receive, send)
            return
        answer = self._check(scope["headers"], scope.get("method", "GET"))
        if answer is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await answer(scope, receive, send)

    def _check(self, headers: list[tuple[bytes, bytes]], method: str) -> Response | None:
        """``None`` if the request carries a token that allows it, else the
        401 (no token, or not one of these) or 403 (a reader's write) to answer."""
        given = [value for name, value in headers if name.lower() == b"authorization"]
        challenge = 'Bearer realm="tenure"'
        if not given:
            message = "a bearer token is required: Authorization: Bearer <token>"
            return _unauthorized(message, challenge)
        scheme, _, credential = given[0].strip().partition(b" ")
        offered = _digest(credential.strip())
        operator = hmac.compare_digest(offered, self._expected)
        reader = self._reader is not None and hmac.compare_digest(offered, self._reader)
        if len(given) != 1 or scheme.lower() != b"bearer" or not (operator or reader):
            challenge += ', error="invalid_token"'
            return _unauthorized("the bearer token is not valid", challenge)
        if operator or method in READING:
            return None
        message = "this token can only read (GET): changes need the operator's token"
        headers_out = {"WWW-Authenticate": challenge + ', error="insufficient_scope"'}
        return JSONResponse(error_json("Authorization", message), 403, headers=headers_out)


READING = frozenset({"GET", "HEAD", "OPTIONS"})
"""The methods a read-only token may use."""


def guarded(scope: Scope) -> bool:
    """Whether a request is to the API or the metrics (bearer token), not to the
    dashboard. Decided on the path the routes match, as Starlette's router
    computes it: under a ``Mount("/queue", ...)`` or a server's ``root_path``,
    the part after the prefix, so that ``/queue/api/tasks`` is the API wherever
    the application is served, and never on the raw path."""
    path = route_path(scope)
    return path in {"/metrics", "/api"} or path.startswith("/api/")


def _unauthorized(message: str, challenge: str) -> Response:
    headers = {"WWW-Authenticate": challenge, "Cache-Control": "no-store"}
    return JSONResponse(error_json("Authorization", message), 401, headers=headers)


def _error(
    status: int, field: str | None, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    return reply(error_json(field, message), status, headers)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _error(exc.status, exc.field, exc.message, exc.headers)


class Answers:
    """The exception handlers: each failure in JSON for the API and the metrics
    (and everywhere without a dashboard), as an HTML page on the dashboard's
    paths. Neither ever holds a traceback: that goes to the log."""

    def __init__(self, site: Site | None) -> None:
        self.site = site

    def _page(self, request: Request) -> Site | None:
        """The dashboard, if it answers for this path."""
        return None if guarded(request.scope) else self.site

    def reply(
        self, request: Request, status: int, field: str | None, message: str,
        headers: Mapping[str, str] | None = None, *, page_message: str | None = None,
    ) -> Response:  # fmt: skip
        site = self._page(request)
        if site is not None:
            try:
                return site.error_page(request, status, page_message or message, headers)
            except Exception:  # the page itself failed: the JSON answer still says why
                log.exception("the dashboard's error page failed")
        return _error(status, field, message, headers)

    async def tenure_error(self, request: Request, exc: Exception) -> Response:
        """A refusal as :mod:`~tenure.http.refusals` says; any other error of
        tenure's a failure."""
        assert isinstance(exc, TenureError)
        answer = refusal(exc)
        if answer is None:
            log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
            return self._failed(request)
        if isinstance(exc, StoreUnavailable):
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        return self.reply(request, answer.status, answer.field, answer.message, answer.headers,
                          page_message=answer.sentence())  # fmt: skip

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Starlette's own refusals: no such route (404), a method the route
        does not take (405, with ``Allow``), and the dashboard's refusals of a form."""
        assert isinstance(exc, HTTPException)
        headers = exc.headers or {}
        path = request.url.path
        if exc.status_code == 404:
            document = f"{root(request.scope)}/api/openapi.json"
            message = f"no route {path}: see {document}"
            return self.reply(request, 404, "path", message, page_message=f"Nothing at {path}.")
        if exc.status_code == 405:
            allowed = headers.get("Allow", "")
            message = f"{request.method} is not allowed here; allowed: {allowed}"
            return self.reply(request, 405, "method", message, headers)
        return self.reply(request, exc.status_code, None, exc.detail, headers)

    def _failed(self, request: Request) -> Response:
        message = "the server failed to answer; its log says why"
        page = "The server failed to answer this; its log says why."
        return self.reply(request, 500, None, message, page_message=page)

    async def unexpected(self, request: Request, exc: Exception) -> Response:
        """A bug: the client gets a 500 without details; the server re-raises,
        so the traceback is logged where the server logs. Answered outside the
        middleware (by Starlette's ServerErrorMiddleware): the security headers
        are added here."""
        response = self._failed(request)
        for name, value in SecurityHeaders.HEADERS:
            response.headers[name.decode()] = value.decode()
        return response
