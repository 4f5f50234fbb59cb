"""Turns a store URL into a store: the one place that knows every backend's scheme.

- ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``; query
  options ``synchronous`` (full, normal, extra) and ``busy_timeout`` (seconds).
- ``postgresql://user@host:port/dbname`` (needs ``tenure[postgres]``).
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlsplit

from tenure.errors import ConfigError
from tenure.store.base import Store

DEFAULT_URL = "sqlite:///tenure.db"
"""The embedded default: a file in the working directory."""

URL_VARIABLE = "TENURE_URL"


def resolve_url(url: str | None) -> str:
    """``url``, else ``$TENURE_URL``, else the embedded default."""
    return url or os.environ.get(URL_VARIABLE) or DEFAULT_URL


def open_store(url: str | None = None, **options: object) -> Store:
    """Open the store that ``url`` names (see :func:`resolve_url`)."""
    url = resolve_url(url)
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        return _sqlite(url, options)
    if scheme in ("postgresql", "postgres"):
        return _postgres(url, options)
    raise ConfigError(f"unknown store URL scheme {scheme!r} in {redact(url)}")


def _sqlite(url: str, options: dict[str, object]) -> Store:
    from tenure.store.sqlite.backend import SQLiteStore  # noqa: PLC0415 - opened on demand

    parts = urlsplit(url)
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if parts.netloc or not path:
        raise ConfigError(f"a SQLite URL is sqlite:///relative.db or sqlite:////abs.db: {url}")
    query = dict(parse_qsl(parts.query))
    unknown = set(query) - {"synchronous", "busy_timeout"}
    if unknown:
        raise ConfigError(f"unknown SQLite URL option(s): {', '.join(sorted(unknown))}")
    try:
        timeout = float(query.get("busy_timeout", 30.0))
    except (ValueError, OverflowError):
        raise ConfigError("busy_timeout must be a number of seconds") from None
    synchronous = query.get("synchronous", "full").lower()
    return SQLiteStore(path, synchronous=synchronous, busy_timeout=timeout, **options)  # type: ignore[arg-type]


def _postgres(url: str, options: dict[str, object]) -> Store:
    try:
        import psycopg  # noqa: F401, PLC0415 - only to tell a missing extra apart
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigError("PostgreSQL needs the extra: pip install 'tenure[postgres]'") from exc
    from tenure.store.postgres.backend import PostgresStore  # noqa: PLC0415 - optional extra

    return PostgresStore(url, **options)  # type: ignore[arg-type]


def redact(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def describe_url(url: str) -> str:
    """``url`` as a user should read it: no password, and a SQLite path made
    absolute (a relative one names a different file in each working directory)."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite" and not parts.path.startswith("//"):
        path = os.path.abspath(parts.path[1:] if parts.path.startswith("/") else parts.path)
        return f"sqlite:///{path}" + (f"?{parts.query}" if parts.query else "")
    return redact(url)
