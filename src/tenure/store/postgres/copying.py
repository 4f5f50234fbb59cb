"""Bulk enqueue on PostgreSQL through ``COPY … FROM STDIN``.

A large batch sent as one JSON array costs the server a ``json_to_recordset``
parse of every row before the insert proper; ``COPY`` streams the rows in the
table's own format and inserts them with the least work the server has. The
statement triggers still see every new row (``COPY FROM`` fires ``AFTER
INSERT`` triggers with their transition table), so the event log, the tallies
and the wake-ups are written exactly as for any other insert.

``COPY`` computes nothing and returns nothing, so a batch takes this path only
when every value is known before it is sent: the creation time is the
transaction's ``now()`` (read in the same transaction, before the rows go, or
the caller's explicit ``now``), and a task whose run time is a delay from that
clock (``delay`` without ``run_at``) sends the batch down the ordinary path,
which computes it on the server. Small batches, whose fixed cost (a
transaction and two more round trips) would outweigh the saving, and async
connections also take the ordinary path.

The rows are written here in ``COPY``'s text format (PostgreSQL documents it:
tab-separated fields, ``\\N`` for NULL, a backslash before a backslash,
a tab, a newline or a carriage return), not by the driver: its ``write_row``
formats all twenty fields of every row one value at a time, and the tasks of a
batch differ only in their id and data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta

from psycopg.rows import tuple_row

from tenure.store import validate
from tenure.store.postgres import rows
from tenure.store.postgres.arrays import text_encoding, text_literal
from tenure.store.postgres.statements import Connection, Statements, take_unique_locks
from tenure.store.types import PreparedTask
from tenure.task import Task, UniqueRule

COPY_MIN_TASKS = 100
"""Batches smaller than this take the ordinary insert (see the module's docstring)."""

COPY_CHUNK_ROWS = 64
"""Rows handed to the driver at a time (about 16 KB of small tasks)."""

_NO_RULE = "\t".join(["\\N"] * 5)

_ESCAPES = str.maketrans(
    {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f", "\v": "\\v"}
)


def copyable(tasks: Sequence[PreparedTask]) -> bool:
    """Whether ``tasks`` can be written by ``COPY``: a large batch none of
    whose run times or fair turns the server must compute."""
    if len(tasks) < COPY_MIN_TASKS:
        return False
    return all(
        (task.run_at is not None or task.delay <= 0) and task.fair_key is None for task in tasks
    )


def copy_insert(
    sql: Statements, conn: Connection, tasks: Sequence[PreparedTask], now: datetime | None
) -> list[Task]:
    """Create ``tasks`` on ``conn`` as :meth:`Statements.insert` does (the same
    transaction handling, unique locks and refusals), their rows sent by ``COPY``."""
    locking = [
        (index, task.id, task.unique.key)
        for index, task in enumerate(tasks)
        if task.unique is not None and task.locks_at_enqueue
    ]

    def write() -> list[Task]:
        created = copy_rows(sql.q, conn, tasks, now)
        sql.run(conn, take_unique_locks(locking))
        return created

    return sql.guarded(conn, [task.id for task in tasks], True, write)


def copy_rows(
    q: Mapping[str, str], conn: Connection, tasks: Sequence[PreparedTask], now: datetime | None
) -> list[Task]:
    """Write ``tasks`` on ``conn`` with one ``COPY``, inside the transaction the
    caller holds open; the tasks as created.

    Those are made while the server inserts the rows already sent: the client
    sends rows far faster than the server inserts them, and leaving the
    ``copy`` block sends the last ones and then waits for the server to finish
    them and run the statement triggers."""
    if now is None:
        with conn.cursor(row_factory=tuple_row) as cur:  # whatever the caller's factory
            cur.execute(q["transaction_now"])
            found = cur.fetchone()
            assert found is not None  # SELECT now() returns one row
            now = found[0]
    at = rows.moment({"now": now}, "now")
    encoding = text_encoding(conn.info.encoding)
    with conn.cursor() as cur, cur.copy(q["copy_tasks"]) as copy:
        for chunk in copy_text(tasks, at):
            copy.write(chunk.encode(encoding))
        return [rows.created(task, at, task.run_at) for task in tasks]


def copy_text(tasks: Sequence[PreparedTask], at: datetime) -> Iterator[str]:
    """The rows of ``tasks`` created ``at``, in the column order of
    ``copy_tasks`` and COPY's text format, :data:`COPY_CHUNK_ROWS` to a string.

    Only a task's id, data and unique rule are formatted for each row; the
    fields a run of tasks shares (the very same objects, as
    ``validate.same_shared`` finds them) are formatted once for the run: a
    fraction of psycopg's ``write_row`` per task (the figures are in the
    benchmarks page's levers in the code)."""
    stamp = _field(at)
    previous: PreparedTask | None = None
    left = right = ""
    lines: list[str] = []
    for task in tasks:
        if previous is None or not validate.same_shared(task, previous):
            left, right = _shared_fields(task, stamp)
        previous = task
        unique = _NO_RULE if task.unique is None else _rule(task.unique)
        meta = _field(task.meta_json)
        expires = _field(None if task.expires is None else at + timedelta(seconds=task.expires))
        keys = f"{_field(task.limit_key)}\t{_field(task.limit_max)}\t{_field(task.order_key)}"
        lines.append(
            f"{_text(task.id)}\t{left}\t{_text(task.data_json)}\t{right}\t{unique}\t{meta}"
            f"\t{expires}\t{keys}\n"
        )
        if len(lines) == COPY_CHUNK_ROWS:
            yield "".join(lines)
            lines = []
    if lines:
        yield "".join(lines)


def _shared_fields(task: PreparedTask, stamp: str) -> tuple[str, str]:
    """The fields of ``task``'s row before its data and after it, up to its
    unique rule: those :func:`validate.same_shared` compares, and the times."""
    left = [*map(_field, (task.topic, task.sub_topic, task.name)), "pending"]
    shared = (task.group_id, task.description, task.priority, task.max_attempts, task.tags)
    right = [*map(_field, shared), _field(task.timeout), _field(task.run_at), stamp, stamp]
    return "\t".join(left), "\t".join(right)


def _rule(rule: UniqueRule) -> str:
    """A unique rule's five fields."""
    values = (rule.key, rule.lock.value, rule.on_conflict.value, rule.ttl, rule.retry_in)
    return "\t".join(map(_field, values))


def _text(value: str) -> str:
    """``value`` as a field of COPY's text format: a backslash, and the control
    characters that would end a field or a row, escaped."""
    if "\\" in value or not value.isprintable():
        return value.translate(_ESCAPES)
    return value


def _field(value: object) -> str:
    """A column's value as a field of COPY's text format (``\\N`` is NULL)."""
    if value is None:
        return "\\N"
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, int):  # the number, also of an int subclass (an IntEnum)
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, tuple):
        return _text(text_literal(value))
    raise TypeError(f"no COPY field for {type(value).__name__}")  # pragma: no cover
