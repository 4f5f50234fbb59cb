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
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

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
from tenure.http.inputs import ApiError
from tenure.http.openapi import document
from tenure.http.routes import Api, reply
from tenure.http.shapes import error_json
from tenure.metrics import store_registry

log = logging.getLogger("tenure.http")

MIN_TOKEN_LENGTH = 16
RETRY_AFTER = "5"
"""Seconds a client is asked to wait after a 503, while the store is out of reach."""


def create_app(app: App, *, token: str | None, insecure: bool = False) -> Starlette:
    """The HTTP API of ``app``'s store and tasks, under ``/api``.

    Every request must carry ``Authorization: Bearer <token>``, unless
    ``insecure`` (then ``token`` must be ``None``): a queue's API enqueues and
    cancels work, and is never meant to be open by accident. The token is at
    least 16 visible ASCII characters (``secrets.token_urlsafe()`` makes one).
    """
    expected = _checked_token(token, insecure)
    served = document(secured=not insecure)
    middleware = [] if expected is None else [Middleware(BearerAuth, token=expected)]
    return Starlette(
        routes=[*Api(app, served).routes(), metrics_route(app)],
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


class BearerAuth:
    """Refuses every request (and websocket) without ``Authorization: Bearer
    <token>``: 401 with ``WWW-Authenticate: Bearer``. Tokens are compared as
    digests with :func:`hmac.compare_digest`, so the comparison takes the same
    time whatever the client sent, even its length. Nothing here logs."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = _digest(token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
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
