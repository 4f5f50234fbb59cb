"""Array parameters sent as one PostgreSQL array literal, built by one join.

A worker's holder writes (complete, fail, extend) send a batch as arrays: the
tasks' ids, lease tokens, owners and results. psycopg's generic list dumper
adapts every element through a dumper of its own, which made it the largest
single item of a worker's drain profile; the same arrays written as literals
cost a tenth of that. A new task's tags go the same way (the figures are in
the benchmarks page's levers in the code). Only the store's pool connections
know these types (:func:`register`); anywhere else they are plain lists,
dumped the generic way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.adapt import Dumper

_TEXT_ARRAY = psycopg.postgres.types["text"].array_oid
_INT8_ARRAY = psycopg.postgres.types["int8"].array_oid


class TextArray(list[str | None]):
    """A ``text[]`` parameter."""


class IntArray(list[int | None]):
    """A ``bigint[]`` parameter."""


def _quoted(value: str | None) -> str:
    if value is None:
        return "NULL"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def text_encoding(encoding: str) -> str:
    """The encoding to send text in on a connection whose ``info.encoding`` is
    ``encoding``, as psycopg's own string dumper chooses it: a SQL_ASCII
    session, whose text the server does not convert, gets UTF-8."""
    return "utf-8" if encoding == "ascii" else encoding


def text_literal(values: Sequence[str | None]) -> str:
    """The ``text[]`` literal of ``values`` (each quoted; ``None`` is NULL)."""
    return "{" + ",".join([_quoted(value) for value in values]) + "}"


class _Literal(Dumper):
    """Dumps an array as its literal, in the connection's encoding."""

    def __init__(self, cls: type, context: Any = None) -> None:
        super().__init__(cls, context)
        conn = self.connection
        self._encoding = text_encoding("utf-8" if conn is None else conn.info.encoding)


class _TextArrayDumper(_Literal):
    oid = _TEXT_ARRAY

    def dump(self, obj: TextArray) -> bytes:
        return text_literal(obj).encode(self._encoding)


class _IntArrayDumper(_Literal):
    oid = _INT8_ARRAY

    def dump(self, obj: IntArray) -> bytes:
        return ("{" + ",".join(["NULL" if v is None else str(int(v)) for v in obj]) + "}").encode()


def register(conn: psycopg.Connection[Any]) -> None:
    """Let ``conn`` send :class:`TextArray` and :class:`IntArray` as literals."""
    conn.adapters.register_dumper(TextArray, _TextArrayDumper)
    conn.adapters.register_dumper(IntArray, _IntArrayDumper)
