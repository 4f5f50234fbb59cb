"""The PostgreSQL store URL's own parameters, which libpq does not know and
must not see: ``listen`` (a direct connection for the listeners, behind a
pooler: see :mod:`tenure.store.postgres.pooler`) and ``schema`` (where
tenure's tables live). Both may come as URL query parameters
(``postgresql://db/app?schema=jobs``) or as keywords of a libpq keyword
string (``host=db dbname=app schema=jobs``); each is taken out of the URL
once, here, and the rest goes to libpq.

The schema defaults to ``$TENURE_SCHEMA``, else ``tenure``. It is spliced into
the store's SQL as an identifier (identifiers cannot be bound parameters), so
it is held to a plain lower-case SQL name, and refused otherwise in one line.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg import conninfo

from tenure.errors import ConfigError

LISTEN = "listen"
"""The store URL's parameter naming a direct connection for the listeners."""

SCHEMA = "schema"
"""The store URL's parameter naming the schema of tenure's tables."""

SCHEMA_VARIABLE = "TENURE_SCHEMA"
DEFAULT_SCHEMA = "tenure"

_NAMED = re.compile(r"^\s*[A-Za-z_]+\s*=")
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_DIRECT = "a PostgreSQL URL that reaches the server directly, such as listen=postgresql://user@db-host:5432/dbname"


class StoreParams(NamedTuple):
    """A PostgreSQL store URL taken apart."""

    url: str
    """What libpq is given: the URL without tenure's own parameters."""
    listen: str | None
    """The direct URL for the listeners, when one is given."""
    schema: str
    """The schema of tenure's tables."""


def store_params(url: str) -> StoreParams:
    """``url``'s own parameters, checked, and the URL libpq is given.

    Raises :class:`~tenure.errors.ConfigError`, in one line, for a parameter
    given twice, a ``listen=`` that is empty or not a PostgreSQL URL libpq can
    read, or a schema that is not a plain lower-case SQL name.
    """
    rest, listen = _take(url, LISTEN)
    rest, schema = _take(rest, SCHEMA)
    if listen is not None:
        _check_listen(listen)
    if schema is None:
        schema = os.environ.get(SCHEMA_VARIABLE) or DEFAULT_SCHEMA
    return StoreParams(rest, listen, check_schema(schema))


def check_schema(schema: str) -> str:
    """``schema`` when it is a plain lower-case SQL name (letters, digits and
    ``_``, not starting with a digit, at most 63 characters); else a
    :class:`~tenure.errors.ConfigError`."""
    if not _SCHEMA_NAME.fullmatch(schema) or schema.startswith("pg_"):
        raise ConfigError(
            f"the store's schema {schema!r} is not a plain lower-case SQL name "
            "(letters a-z, digits and _, not starting with a digit or pg_, at most 63)"
        )
    return schema


def _take(url: str, name: str) -> tuple[str, str | None]:
    """``url`` without its parameter ``name``, and that parameter's value."""
    if _NAMED.match(url):
        return _from_keywords(url, name)
    return _from_uri(url, name)


def _from_uri(url: str, wanted: str) -> tuple[str, str | None]:
    base, mark, query = url.partition("?")
    query, hash_mark, fragment = query.partition("#")
    kept, found = [], []
    for part in query.split("&") if mark else []:
        name, _, value = part.partition("=")
        if unquote(name) == wanted:
            found.append(unquote(value))
        else:
            kept.append(part)
    if len(found) > 1:
        raise ConfigError(f"the store URL gives {wanted}= more than once")
    rest = base + (f"?{'&'.join(kept)}" if kept else "") + (hash_mark + fragment)
    return rest, (found[0] if found else None)


def _from_keywords(url: str, wanted: str) -> tuple[str, str | None]:
    keyword = re.compile(rf"(?:^|\s){wanted}\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")
    found = keyword.findall(url)
    if len(found) > 1:
        raise ConfigError(f"the store's connection string gives {wanted}= more than once")
    if not found:
        return url, None
    value: str = found[0]
    if value.startswith("'"):
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    return keyword.sub("", url).strip(), value


def _check_listen(listen: str) -> None:
    """Refuse a ``listen=`` value that cannot be a direct PostgreSQL URL."""
    if not listen.strip():
        raise ConfigError(f"the store URL's listen= is empty: give {_DIRECT}")
    if _NAMED.match(listen):
        postgres = True
    else:
        postgres = "://" in listen and urlsplit(listen).scheme in ("postgresql", "postgres")
    if not postgres:
        raise ConfigError(f"the store URL's listen= is not a PostgreSQL URL: give {_DIRECT}")
    try:
        conninfo.conninfo_to_dict(listen)
    except psycopg.ProgrammingError as exc:
        reason = "its text is not shown: it holds a password"
        if "password" not in listen.lower():
            reason = str(exc).strip().splitlines()[0]
        raise ConfigError(f"the store URL's listen= does not parse: {reason}") from None
