"""The ASGI application: routes, the bearer token in front of all of them, and
one JSON error shape for everything that is not a success.

Bad input is always a 4xx naming the field; the store out of reach is a 503
with ``Retry-After``; anything else that fails is a 500 whose details go to the
log (``tenure.http``), not to the client.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure.app import App
from tenure.errors import (
    ConfigError,
    DuplicateTask,
    InvalidInput,
    InvalidTransition,
    StoreUnavailable,
    TaskNotFound,
    TenureError,
    UniqueConflict,
)
from tenure.http.dashboard import Site
from tenure.http.inputs import ApiError
from tenure.http.openapi import document
from tenure.http.routes import Api, reply
from tenure.http.shapes import error_json
from tenure.metrics import store_registry

log = logging.getLogger("tenure.http")

MIN_TOKEN_LENGTH = 16
RETRY_AFTER = "5"
"""Seconds a client is asked to wait after a 503, while the store is out of reach."""


def create_app(
    app: App, *, token: str | None, insecure: bool = False, dashboard: bool = True
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
    """
    expected = _checked_token(token, insecure)
    served = document(secured=not insecure)
    middleware = [Middleware(SecurityHeaders)]
    if expected is None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_NAMES))
    else:
        middleware.append(Middleware(BearerAuth, token=expected))
    routes: list[BaseRoute] = [*Api(app, served).routes(), metrics_route(app)]
    if dashboard:
        routes += Site(app, expected).routes()
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={
            ApiError: _api_error,
            TenureError: _tenure_error,
            HTTPException: _http_error,
            Exception: _unexpected,
        },
    )


def metrics_route(app: App) -> Route:
    """``GET /metrics``: the store's figures in Prometheus's text format, read at
    scrape time (:mod:`tenure.metrics`), behind the same token as the API."""
    registry = store_registry(lambda: app.store)

    async def metrics(request: Request) -> Response:
        body = await run_in_threadpool(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", metrics, methods=["GET"])


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


LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1", "[::1]"]
"""The ``Host`` names an unguarded server answers to."""

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
    The dashboard's pages check their own session instead (a browser sends a
    cookie, not a header). Tokens are compared as
    digests with :func:`hmac.compare_digest`, so the comparison takes the same
    time whatever the client sent, even its length. Nothing here logs."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = _digest(token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not _guarded(scope["path"]):
            await self.app(scope, receive, send)
            return
        answer = self._check(scope["headers"])
        if answer is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await answer(scope, receive, send)

    def _check(self, headers: list[tuple[bytes, bytes]]) -> Response | None:
        """``None`` if the request carries the token, else the 401 to answer."""
        given = [value for name, value in headers if name.lower() == b"authorization"]
        challenge = 'Bearer realm="tenure"'
        if not given:
            message = "a bearer token is required: Authorization: Bearer <token>"
            return _unauthorized(message, challenge)
        scheme, _, credential = given[0].strip().partition(b" ")
        genuine = hmac.compare_digest(_digest(credential.strip()), self._expected)
        if len(given) == 1 and scheme.lower() == b"bearer" and genuine:
            return None
        challenge += ', error="invalid_token"'
        return _unauthorized("the bearer token is not valid", challenge)


def _guarded(path: str) -> bool:
    """Whether a path is the API's or the metrics' (bearer token), not the dashboard's."""
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


# Refusals of the store's, as the client's mistakes or the task's state.
_REFUSALS: tuple[tuple[type[TenureError], int, str | None], ...] = (
    (TaskNotFound, 404, "id"),
    (DuplicateTask, 409, "options.id"),
    (InvalidTransition, 409, "status"),
    (UniqueConflict, 409, None),
)


async def _tenure_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TenureError)
    if isinstance(exc, InvalidInput):
        return _error(422, exc.field, exc.message)
    for kind, status, field in _REFUSALS:
        if isinstance(exc, kind):
            return _error(status, field, str(exc))
    if isinstance(exc, StoreUnavailable):
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        message = "the store cannot be reached now; try again later"
        return _error(503, None, message, {"Retry-After": RETRY_AFTER})
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _error(500, None, "the server failed to answer; its log says why")


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals: no such route (404), a method the route does not
    take (405, with ``Allow``)."""
    assert isinstance(exc, HTTPException)
    headers = exc.headers or {}
    if exc.status_code == 404:
        return _error(404, "path", f"no route {request.url.path}: see /api/openapi.json")
    if exc.status_code == 405:
        allowed = headers.get("Allow", "")
        message = f"{request.method} is not allowed here; allowed: {allowed}"
        return _error(405, "method", message, headers)
    return _error(exc.status_code, None, exc.detail, headers)


async def _unexpected(request: Request, exc: Exception) -> Response:
    """A bug: the client gets a 500 without details; the server re-raises, so
    the traceback is logged where the server logs."""
    return _error(500, None, "the server failed to answer; its log says why")
