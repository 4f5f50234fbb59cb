"""COPY's text rows for a bulk enqueue: one line per task, twenty fields, each
read back by COPY's rules as the value it was (the round trip through the
server is in tests/integration/test_postgres_copy.py)."""

from __future__ import annotations

import enum
import json
import re
from datetime import UTC, datetime, timedelta

from tenure.store import NewTask, validate
from tenure.store.postgres import copying
from tenure.store.types import PreparedTask
from tenure.task import LockPhase, OnConflict, UniqueRule

AT = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
ODD = 'tab\there new\nline cr\rret back\\slash "q" \\N \b\f\v end'
_UNESCAPES = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v"}


class Level(enum.IntEnum):
    HIGH = 5


def _read(field: str) -> str | None:
    """A field as COPY's text format reads it."""
    if field == "\\N":
        return None
    return re.sub(r"\\(.)", lambda m: _UNESCAPES[m.group(1)], field)


def _prepared(**fields: object) -> PreparedTask:
    return validate.prepare(NewTask(**fields), 1 << 20)  # type: ignore[arg-type]


def test_each_task_is_one_line_of_its_own_values() -> None:
    rule = UniqueRule("key\t1", LockPhase.UNTIL_EXECUTED, OnConflict.REJECT, ttl=7.5)
    tasks = [
        _prepared(
            topic="t",
            name=ODD,
            id="id\\1",
            data={"s": ODD},
            priority=Level.HIGH,
            tags=frozenset({"a,b", 'q"', "t\tb\\s"}),
            timeout=2.5,
            description=ODD,
            run_at=AT + timedelta(seconds=1),
            unique=rule,
            meta={"who": ODD},
            expires=90.0,
            limit_key="key\t1",
            limit_max=3,
            order_key=ODD,
        ),
        _prepared(topic="t", name="plain", id="id-2", data={"args": []}),
    ]
    text = "".join(copying.copy_text(tasks, AT))
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 3  # one line per task, each ended
    first, second = (line.split("\t") for line in lines[:2])
    assert len(first) == len(second) == 25
    assert [_read(f) for f in first[:6]] == [
        "id\\1",
        "t",
        "default",
        ODD,
        "pending",
        tasks[0].data_json,
    ]
    assert first[6] == "\\N"  # group_id NULL
    assert _read(first[7]) == ODD
    assert first[8:10] == ["5", "1"]  # an IntEnum priority as its number
    assert first[10] == '{"a,b","q\\\\"","t\\tb\\\\\\\\s"}'  # the literal, escaped for COPY
    assert _read(first[10]) == '{"a,b","q\\"","t\tb\\\\s"}'
    assert first[11] == "2.5"
    assert datetime.fromisoformat(first[12]) == AT + timedelta(seconds=1)
    assert datetime.fromisoformat(first[13]) == datetime.fromisoformat(first[14]) == AT
    assert [_read(f) for f in first[15:18]] == ["key\t1", "until_executed", "reject"]
    assert first[18] == "7.5"
    assert [_read(f) for f in second[15:20]] == [None] * 5
    assert _read(second[3]) == "plain" and _read(second[12]) is None
    assert json.loads(_read(first[20])) == {"who": ODD} and _read(second[20]) is None
    assert datetime.fromisoformat(first[21]) == AT + timedelta(seconds=90)
    assert _read(second[21]) is None
    assert [_read(f) for f in first[22:25]] == ["key\t1", "3", ODD]
    assert [_read(f) for f in second[22:25]] == [None] * 3


def test_a_batch_comes_in_chunks_of_whole_lines() -> None:
    tasks = [_prepared(topic="t", name="n", id=f"i{n}") for n in range(copying.COPY_CHUNK_ROWS + 3)]
    chunks = list(copying.copy_text(tasks, AT))
    assert [chunk.count("\n") for chunk in chunks] == [copying.COPY_CHUNK_ROWS, 3]
    assert all(chunk.endswith("\n") for chunk in chunks)
    assert [line.split("\t")[0] for line in "".join(chunks).splitlines()] == [
        task.id for task in tasks
    ]
