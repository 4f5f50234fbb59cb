"""Who may look at the dashboard and act on the queue: a session cookie made at
login from the API's token, and a CSRF token for every form.

The session is a signed cookie, not a server-side record:
``<id>.<expiry>.<role>.<mac>``, the MAC keyed by a digest of the API token, so
it survives a restart of ``tenure serve`` and dies with a change of token. The
role is ``o`` for a login with the operator's token, ``r`` for one with the
read-only token: such a session sees every page and changes nothing. It is ``HttpOnly`` (no script
reads it), ``SameSite=Strict`` (no other site's page sends it) and ``Secure``
when the dashboard is served over HTTPS. Each form carries a CSRF token, the MAC
of the session's id, and each POST must bring it back and, when the browser
says where it comes from (``Origin``), come from this very host.

Without a token (``--insecure``, loopback only) there is no login, but sessions
and CSRF tokens still exist, keyed by a secret made for the run, so another
site's page still cannot make the browser act on the queue.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from tenure.http.where import root as served_root

COOKIE = "tenure_session"
LIFETIME = 12 * 3600
"""Seconds a login lasts."""

FLASH = "tenure_notice"
"""A one-shot cookie carrying what the last action did, to show once."""


OPERATOR, READER = "o", "r"
"""The roles a session has: the operator's acts on the queue, a reader's only looks."""


@dataclass(frozen=True)
class Session:
    """A browser's session: its id, the CSRF token its forms carry, and whether
    it may act on the queue (a login with the operator's token) or only look."""

    id: str
    csrf: str
    can_act: bool = True


class Sessions:
    """Makes and checks session cookies and CSRF tokens for one server."""

    def __init__(self, token: str | None, read_token: str | None = None) -> None:
        self.open = token is None
        secret = secrets.token_bytes(32) if token is None else token.encode()
        self._key = hmac.digest(hashlib.sha256(secret).digest(), b"tenure dashboard", "sha256")
        self._token_digest = hashlib.sha256(secret).digest()
        self._read_digest = None if read_token is None else _digest(read_token)

    def _mac(self, text: str) -> str:
        digest = hmac.digest(self._key, text.encode(), "sha256")
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def role_of(self, given: str) -> str | None:
        """The role ``given`` logs in as: :data:`OPERATOR` for the API token,
        :data:`READER` for the read-only one, else ``None`` (each compared in
        constant time)."""
        if self.open:
            return None
        candidate = _digest(given)
        if hmac.compare_digest(candidate, self._token_digest):
            return OPERATOR
        if self._read_digest is not None and hmac.compare_digest(candidate, self._read_digest):
            return READER
        return None

    def new(self, role: str = OPERATOR) -> tuple[Session, str]:
        """A new session in ``role`` and the cookie value that carries it."""
        session_id = secrets.token_urlsafe(16)
        expires = int(time.time()) + LIFETIME
        value = f"{session_id}.{expires}.{role}"
        return self._session(session_id, role), f"{value}.{self._signed(value, role)}"

    def _signed(self, value: str, role: str) -> str:
        """The MAC of a cookie's ``value``: a reader's also covers the read-only
        token, so that a reader's sessions end when that token changes or goes,
        as everyone's end when the operator's token changes."""
        if role == READER and self._read_digest is not None:
            return self._mac(f"{value}.{self._read_digest.hex()}")
        return self._mac(value)

    def _session(self, session_id: str, role: str) -> Session:
        return Session(session_id, self._mac(f"csrf:{session_id}"), role == OPERATOR)

    def of(self, request: Request) -> Session | None:
        """The request's session, if its cookie is genuine and not expired."""
        parts = request.cookies.get(COOKIE, "").split(".")
        if len(parts) != 4:
            return None
        session_id, expires, role, mac = parts
        if not (session_id and expires.isascii() and expires.isdigit() and mac):
            return None
        if role != OPERATOR and (role != READER or self._read_digest is None):
            return None
        if not _same(mac, self._signed(f"{session_id}.{expires}.{role}", role)):
            return None
        if int(expires) < time.time():
            return None
        return self._session(session_id, role)

    def set_cookie(self, response: Response, request: Request, value: str) -> None:
        """Give the browser the session cookie, for the dashboard's paths only."""
        response.set_cookie(COOKIE, value, max_age=LIFETIME, **cookie_scope(request))

    def forget(self, response: Response, request: Request) -> None:
        """Take the session cookie back (logout)."""
        response.delete_cookie(COOKIE, **cookie_scope(request))


def root(request: Request) -> str:
    """Where the dashboard is served: ``""`` at the server's root, else the
    prefix it is mounted under (``/queue``); see :mod:`tenure.http.where`."""
    return served_root(request.scope)


def cookie_scope(request: Request) -> dict[str, Any]:
    """The attributes of every cookie the dashboard sets or deletes: its own
    paths only (a cookie path of ``/queue`` is sent to ``/queue`` and below, not
    to the application it is mounted in), never to a script, never to another
    site, only over HTTPS when served over it."""
    return {
        "path": root(request) or "/",
        "httponly": True,
        "samesite": "strict",
        "secure": request.url.scheme == "https",
    }


def same_origin(request: Request) -> bool:
    """Whether a POST comes from a page of this host: its ``Origin`` (or, when a
    browser sends none, its ``Referer``) names this host, or neither is sent."""
    claimed = request.headers.get("origin") or request.headers.get("referer")
    if claimed is None:
        return True
    if claimed == "null":
        return False
    where = urlsplit(claimed)
    return where.scheme == request.url.scheme and where.netloc == request.url.netloc


def csrf_ok(session: Session, form: FormData) -> bool:
    """Whether the form carries the session's CSRF token."""
    given = form.get("csrf")
    return isinstance(given, str) and _same(given, session.csrf)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _same(given: str, expected: str) -> bool:
    """``given == expected`` in constant time, whatever ``given`` holds (a
    cookie or a form field may hold any character; ``compare_digest`` refuses
    non-ASCII strings with a ``TypeError``, but not bytes)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())


def safe_next(target: str | None, prefix: str = "") -> str:
    """Where to go after login or an action: a path of the dashboard's own
    (under ``prefix``, where it is mounted), never another host, never the
    application it is mounted in; else the overview."""
    home = prefix + "/"
    if not target or not target.startswith("/") or target.startswith("//"):
        return home
    if "\\" in target or any(ord(char) < 32 for char in target):
        return home
    if prefix and not (target == prefix or target.startswith(home)):
        return home
    path = unquote(urlsplit(target).path)  # without its query or fragment
    if any(segment in (".", "..") for segment in path.split("/")):  # a browser resolves them
        return home
    return target
