"""Where tenure's HTTP application is served: at a server's root, or under a
prefix (a ``Mount("/queue", ...)`` in the user's application, or a server's
``root_path`` behind a reverse proxy).

The prefix is read once, as a request enters the application, and kept in the
request's scope: routing further in (the dashboard's ``/static`` mount)
lengthens ``root_path``, and an error answered there must still know where the
application itself begins. The API's and the metrics' token and the
dashboard's links, redirects and cookies are all decided from it.
"""

from __future__ import annotations

# The router's own computation of the path a route matches (Starlette keeps
# it in a private module; the mount tests would fail if it moved or changed).
from starlette._utils import get_route_path
from starlette.types import ASGIApp, Receive, Scope, Send

_KEY = "tenure.root_path"


class Rooted:
    """Keeps, in each request's scope, the prefix the application is served
    under, as the request enters it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope[_KEY] = scope.get("root_path", "")
        await self.app(scope, receive, send)


def _entered(scope: Scope) -> str:
    """``root_path`` as the request entered the application."""
    prefix: str = scope.get(_KEY, scope.get("root_path", ""))
    return prefix


def root(scope: Scope) -> str:
    """The prefix the application is served under (``""`` at the root, else
    ``/queue``): every link, form, redirect and cookie of the dashboard begins
    with it."""
    return _entered(scope).rstrip("/")


def route_path(scope: Scope) -> str:
    """The path after the application's prefix, as its router matches it
    (``/api/tasks`` for ``/queue/api/tasks``), never the raw path."""
    return get_route_path({"path": scope["path"], "root_path": _entered(scope)})
