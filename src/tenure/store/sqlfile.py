"""Loads named SQL queries from a backend's ``queries.sql``.

Each query starts with a line ``-- name: <name>``; comment lines before it
document it. A part that many queries share (the list of a task's columns)
starts with ``-- fragment: <name>`` instead, and a query takes it in with
``{name}``: it is spliced in once, as the file is loaded, from the file itself
(a fragment may take in other fragments too).
A loader may splice names of its own the same way (the PostgreSQL store's
``{schema}``, a validated identifier, since identifiers cannot be parameters).
SQL is never assembled from strings at run time: values are always bound
parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

_HEADER = re.compile(r"^-- (name|fragment): ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def load_queries(
    package: str, filename: str = "queries.sql", splices: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Every named query of ``package``/``filename``, by name, fragments spliced
    in, then each of ``splices`` (``{name}`` → its text) wherever it is named."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    fragments: dict[str, str] = {}
    for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        found = fragments if kind == "fragment" else queries
        if name in found:
            raise ValueError(f"{package}/{filename}: {kind} {name!r} is defined twice")
        found[name] = _strip_trailing_comments(body)
    used: set[str] = set()
    for _ in fragments:  # a fragment may take in others, to any depth short of a loop
        fragments = {name: _splice(sql, fragments, used) for name, sql in fragments.items()}
    queries = {name: _splice(sql, fragments, used) for name, sql in queries.items()}
    unused = sorted(set(fragments) - used)
    if unused:
        raise ValueError(f"{package}/{filename}: fragment {unused[0]!r} is never used")
    for name, text in (splices or {}).items():
        queries = {query: sql.replace("{" + name + "}", text) for query, sql in queries.items()}
    return queries


def _splice(sql: str, fragments: Mapping[str, str], used: set[str]) -> str:
    """``sql`` with each of ``fragments`` it names taken in; their names
    added to ``used``."""
    for name, fragment in fragments.items():
        if "{" + name + "}" in sql:
            sql = sql.replace("{" + name + "}", fragment)
            used.add(name)
    return sql


def _strip_trailing_comments(body: str) -> str:
    lines = body.strip().splitlines()
    while lines and lines[-1].lstrip().startswith("--"):
        lines.pop()
    return "\n".join(lines).strip()


def migrations(package: str) -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` of every ``NNNN_name.sql`` in ``package``.migrations,
    in version order."""
    folder = resources.files(package).joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_([a-z0-9_]+)\.sql", entry.name)
        if match:
            found.append((int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    return sorted(found)


def teardown(package: str) -> str:
    """The SQL that drops whatever ``package``'s migrations made, at any version
    (``migrations/teardown.sql``): the reverse of them all at once, as
    ``manage.py migrate tenure zero`` runs it."""
    folder = resources.files(package).joinpath("migrations")
    return folder.joinpath("teardown.sql").read_text(encoding="utf-8")
