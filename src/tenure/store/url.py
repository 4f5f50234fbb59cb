"""Turns a store URL into a store: the one place that knows every backend's scheme.

- ``sqlite:///relative/path.db`` (relative to the working directory) or
  ``sqlite:////absolute/path.db``; query options ``synchronous`` (full,
  normal, extra) and ``busy_timeout`` (seconds).
- ``postgresql://user:password@host:port/dbname`` (or ``postgres://``), or a
  libpq keyword string ``host=… port=… dbname=… user=…`` (needs
  ``tenure[postgres]``). Its query options are libpq's, and ``listen``: the
  URL of a direct connection for the store's LISTEN, when the store URL goes
  through a pooler in transaction mode such as PgBouncer
  (``?listen=postgresql%3A%2F%2Fuser%40db-host%3A5432%2Fdbname``; see
  :mod:`tenure.store.postgres.pooler`), and ``schema``, where tenure's tables
  live (``tenure`` unless ``$TENURE_SCHEMA`` names another). A ``listen`` that
  is empty, given twice, or not a PostgreSQL URL, and a ``schema`` that is not a
  plain lower-case name, are ``ConfigError``s (see
  :mod:`tenure.store.postgres.params`).

A URL written for SQLAlchemy or a Django setting works as it is:
``postgresql+psycopg://…`` (or ``+psycopg2``, ``sqlite+pysqlite``) names their
driver, which tenure does not need, so the ``+driver`` part is dropped.

The module also says which store a URL names, for start-up lines
(:func:`describe_url`).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from tenure.errors import ConfigError, StoreUnavailable
from tenure.pyproject import configured_url
from tenure.retry import Backoff
from tenure.store.base import Store
from tenure.store.sqlite import is_memory_path

DEFAULT_URL = "sqlite:///tenure.db"
"""The embedded default: a file in the working directory."""

URL_VARIABLE = "TENURE_URL"

Dialect = Literal["sqlite", "postgresql"]

DIALECT_PACKAGES: dict[Dialect, str] = {
    "sqlite": "tenure.store.sqlite",
    "postgresql": "tenure.store.postgres",
}
_KEYWORDS = re.compile(r"^\s*[A-Za-z_]+\s*=")
_KEYWORD_PASSWORD = re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?password=)[^&#]*")
_QUERY_LISTEN = re.compile(r"([?&]listen=)([^&#]+)")


def resolve_url(url: str | None) -> str:
    """``url``, else ``$TENURE_URL``, else ``url`` in ``[tool.tenure]`` of the
    nearest pyproject.toml, else the embedded default."""
    return url or os.environ.get(URL_VARIABLE) or configured_url() or DEFAULT_URL


def open_store(url: str | None = None, **options: object) -> Store:
    """Open the store that ``url`` names (see :func:`resolve_url`).

    ``options`` go to the store: ``max_payload_bytes`` for every store; for
    PostgreSQL also ``migrate``, ``connect_timeout``, ``role`` and the pool's
    sizes (see :class:`~tenure.store.postgres.backend.PostgresStore`).
    """
    dialect, url = parse_url(resolve_url(url))
    if dialect == "sqlite":
        return _sqlite(url, options)
    return _postgres(url, options)


def parse_url(url: str) -> tuple[Dialect, str]:
    """The dialect ``url`` names and the URL as its backend reads it (the
    ``+driver`` part of a SQLAlchemy-style scheme dropped).

    Raises :class:`~tenure.errors.ConfigError`, in one line, for anything that
    is not a store URL.
    """
    if _KEYWORDS.match(url):  # a URL never begins with "name="
        return "postgresql", url
    scheme = urlsplit(url).scheme if ":" in url else ""
    base = scheme.partition("+")[0]
    rest = url[len(scheme) :]
    if base == "sqlite":
        return "sqlite", "sqlite" + rest
    if base in ("postgresql", "postgres"):
        return "postgresql", base + rest
    if not scheme:
        raise ConfigError(
            f"not a store URL: {redact(url)!r} (write sqlite:///tenure.db, "
            "postgresql://user@host:5432/dbname or host=... dbname=... user=...)"
        )
    raise ConfigError(
        f"unknown store URL scheme {scheme!r} in {redact(url)} (tenure knows sqlite and postgresql)"
    )


def is_private(url: str) -> bool:
    """Whether ``url`` names a store no other process can see (``sqlite:///:memory:``)."""
    dialect, parsed = parse_url(url)
    return dialect == "sqlite" and is_memory_path(sqlite_parts(parsed)[0])


def sqlite_parts(url: str) -> tuple[str, dict[str, str]]:
    """The database path and the query options of a ``sqlite:`` URL."""
    parts = urlsplit(url)
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if parts.netloc or not path:
        raise ConfigError(f"a SQLite URL is sqlite:///relative.db or sqlite:////abs.db: {url}")
    query = dict(parse_qsl(parts.query))
    unknown = set(query) - {"synchronous", "busy_timeout"}
    if unknown:
        raise ConfigError(f"unknown SQLite URL option(s): {', '.join(sorted(unknown))}")
    return path, query


def _sqlite(url: str, options: dict[str, object]) -> Store:
    from tenure.store.sqlite.backend import SQLiteStore  # noqa: PLC0415 - opened on demand

    path, query = sqlite_parts(url)
    try:
        timeout = float(query.get("busy_timeout", 30.0))
    except (ValueError, OverflowError):
        raise ConfigError("busy_timeout must be a number of seconds") from None
    synchronous = query.get("synchronous", "full").lower()
    return SQLiteStore(path, synchronous=synchronous, busy_timeout=timeout, **options)  # type: ignore[arg-type]


def _postgres(url: str, options: dict[str, object]) -> Store:
    need_psycopg()
    from tenure.store.postgres.backend import PostgresStore  # noqa: PLC0415 - optional extra

    return PostgresStore(url, **options)  # type: ignore[arg-type]


def need_psycopg() -> None:
    try:
        import psycopg  # noqa: F401, PLC0415 - only to tell a missing extra apart
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigError("PostgreSQL needs the extra: pip install 'tenure[postgres]'") from exc


# -- saying which store --------------------------------------------------------------


def redact(url: str) -> str:
    """``url`` without its password, for messages and logs (a URL's user
    information and ``password`` option, or a keyword string's ``password``;
    those of a PostgreSQL URL's ``listen=`` URL too, which is shown decoded)."""
    if _KEYWORDS.match(url):  # a URL never begins with "name="
        return _KEYWORD_PASSWORD.sub(r"\1***", url)
    url = _QUERY_LISTEN.sub(lambda found: found[1] + redact(unquote(found[2])), url)
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    try:
        password = urlsplit(url).password
    except ValueError:  # a malformed netloc (an unclosed "[", a bad port)
        return url
    if password is None:
        return url
    return url.replace(f":{password}@", ":***@", 1)


def describe_url(url: str | None = None) -> str:
    """The store ``url`` names (see :func:`resolve_url`), as a start-up line
    should show it: no password, and a SQLite path made absolute (a relative
    one names a different file in each working directory)."""
    url = resolve_url(url)
    try:
        dialect, parsed = parse_url(url)
        if dialect == "sqlite":
            path, _ = sqlite_parts(parsed)
            query = urlsplit(parsed).query
            return f"sqlite:///{os.path.abspath(path)}" + (f"?{query}" if query else "")
    except ConfigError:
        pass  # not a store URL: shown as written, as an error will show it
    return redact(url)


OPEN_RETRIES = Backoff(base=1.0, maximum=30.0, jitter=0.0)
"""The waits between attempts to reach a store at start: 1 s, 2 s, 4 s, ... up
to 30 s, as the log lines say them (one process's start, nothing to spread)."""


def open_patiently(
    opener: Callable[[], Store], stop: threading.Event, log: logging.Logger
) -> Store | None:
    """``opener()``, tried again after an outage (``StoreUnavailable``) with
    the waits of :data:`OPEN_RETRIES`, one log line per attempt, until
    it works or ``stop`` is set (then ``None``): long-running processes started
    before their database wait for it. A permanent error is raised at once."""
    delays = OPEN_RETRIES.delays()
    while True:
        try:
            return opener()
        except StoreUnavailable as exc:
            delay = next(delays)
            log.warning("%s; retrying in %gs", exc, delay)
            if stop.wait(delay):
                return None
