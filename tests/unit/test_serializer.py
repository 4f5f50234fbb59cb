"""The JSON codec: its encoder and scanner, made once, write and read exactly
what the standard library's json does at tenure's settings, and refuse the same."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import uuid
from types import ModuleType
from typing import Any

import pytest

from tenure import serializer
from tenure.errors import InvalidInput

VALUES: list[Any] = [
    {"args": [1, "é", 2.5, None, True, False], "kwargs": {"a": {"b": [1e300, -0.0]}}},
    {"args": [], "kwargs": {}},
    "plain",
    'quote " backslash \\ newline \n tab \t U+2028 \u2028 emoji \U0001f600',
    0,
    -(10**30),
    None,
    [],
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    [[[[[]]]]],
    {"nested": [{"deep": [{"deeper": 1}]}]},
]


def _standard(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


@pytest.fixture(params=["c", "python"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The serializer as imported: with json's C encoder, and as it is made
    on an interpreter without one."""
    if request.param == "python":
        monkeypatch.setattr(serializer, "_chunks", serializer.chunks_with(None))
    return serializer


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_writes_what_json_writes_and_reads_it_back(codec: ModuleType, value: Any) -> None:
    text = codec.dumps(value, "data")
    assert text == _standard(value)
    assert text.size == len(text.encode("utf-8"))
    assert codec.loads(text) == json.loads(text)
    assert codec.loads(text.encode("utf-8")) == json.loads(text)


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        (math.nan, "data", "nan is not JSON; pass None, or a string"),
        ({"x": [math.inf]}, "data['x'][0]", "inf is not JSON"),
        ({"x": object()}, "data['x']", "object is not JSON; pass dicts, lists"),
        ({(1, 2): "tuple key"}, "data", "keys are not all strings"),
        ({"x": {1, 2}}, "data['x']", r"set is not JSON; pass a list \(sorted\(value\)\)"),
        ({"args": [datetime.date(2026, 1, 1)]}, "args[0]", r"ISO string \(value.isoformat"),
        ({"kwargs": {"raw": b"x"}}, "kwargs['raw']", "bytes is not JSON; pass text"),
        ([decimal.Decimal("1.5")], "data[0]", r"Decimal is not JSON; pass a string \(str"),
        ([uuid.UUID(int=1)], "data[0]", r"UUID is not JSON; pass a string \(str"),
        ("NUL \x00 here", "data", "NUL character"),
        ("lone \ud800 surrogate", "data", "lone surrogate"),
    ],
)
def test_refuses_what_cannot_be_stored(
    codec: ModuleType, value: Any, field: str, message: str
) -> None:
    """Each refusal names where the value is (a task's data from its args and
    kwargs) and what would work instead."""
    with pytest.raises(InvalidInput, match=message) as refused:
        codec.dumps(value, "data")
    assert refused.value.field == field


def test_a_value_that_holds_itself_is_refused(codec: ModuleType) -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(InvalidInput):
        codec.dumps(looped, "data")


def test_a_payload_over_the_limit_is_refused() -> None:
    serializer.dumps("x" * 8, "data", max_bytes=10)
    with pytest.raises(InvalidInput, match="over the limit of 10"):
        serializer.dumps("x" * 9, "data", max_bytes=10)


@pytest.mark.parametrize("text", [' {"a": 1}', '{"a": 1}\n', "\t[1, 2] ", "NaN", '"s"'])
def test_reads_json_with_spaces_around_it(text: str) -> None:
    read = serializer.loads(text)
    expected = json.loads(text)
    assert read == expected or (math.isnan(read) and math.isnan(expected))


@pytest.mark.parametrize("text", ["", " ", '{"a":', '{"a": 1} x', "[1] [2]", "nan"])
def test_refuses_what_is_not_one_json_value(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        serializer.loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert str(ours.value) == str(theirs.value)


def test_nothing_stored_reads_as_none() -> None:
    assert serializer.loads(None) is None
