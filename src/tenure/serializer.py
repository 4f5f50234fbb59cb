"""JSON encoding of payloads and results: the only format tenure stores.

Strict on purpose: NaN and Infinity, NUL characters (PostgreSQL's jsonb refuses
them), lone surrogates and values JSON cannot carry are refused with
:class:`~tenure.errors.InvalidInput` instead of being stored in a form that would
not read back as written.
"""

from __future__ import annotations

import datetime
import decimal
import json
import json.encoder
import math
import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from tenure.errors import InvalidInput


class JsonText(str):
    """JSON text as :func:`dumps` made it, checked and measured (``size`` in UTF-8
    bytes): a worker encodes a task's result once, to check it, and hands this to
    the store, which then need not encode it again."""

    size: int


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json's own C encoder and scanner, made once: ``JSONEncoder.encode`` builds a
# new encoder object on every call and ``JSONDecoder.decode`` matches leading
# whitespace with a regex first, which together cost about as much as the
# encoding of a small payload itself. The encoder is the one ``JSONEncoder``
# would make (compact, non-ASCII kept, NaN refused), without its check for
# cycles: a value that holds itself is refused as nested too deeply instead.
_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_decoder = json.JSONDecoder()
_decode = _decoder.decode
Chunks = Callable[[Any, int], Iterable[str]]


def chunks_with(make_encoder: Callable[..., Chunks] | None) -> Chunks:
    """The encoder: the C one ``make_encoder`` makes, or ``JSONEncoder``'s own
    where the interpreter has none (``None``)."""
    if make_encoder is None:
        return lambda value, _level: _encoder.iterencode(value)
    return make_encoder(
        None, _refuse, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )


_chunks = chunks_with(getattr(json.encoder, "c_make_encoder", None))
# A NUL as the encoder writes it: \u0000 after an even number of backslashes
# (none, or escaped ones). The text \u0000 itself (a backslash, then "u0000")
# is written with its backslash escaped, an odd number in all, and is kept.
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_scan: Callable[[str, int], tuple[Any, int]] = _decoder.scan_once  # type: ignore[attr-defined]


def dumps(value: Any, field: str, max_bytes: int | None = None) -> JsonText:
    """Encode ``value`` as compact JSON; ``field`` names it in any error."""
    try:
        text = "".join(_chunks(value, 0))
    except (TypeError, ValueError) as exc:
        try:
            found = _culprit(value, ())
        except RecursionError:  # a value that holds itself
            found = None
        if found is None:
            raise InvalidInput(field, f"not JSON-serializable: {exc}") from None
        path, culprit = found
        raise InvalidInput(_where(field, path), _advice(culprit)) from None
    except RecursionError:
        raise InvalidInput(field, "nested too deeply to serialize") from None
    if ("\\u0000" in text and _NUL_ESCAPE.search(text)) or "\x00" in text:
        raise InvalidInput(field, "contains a NUL character, which stores cannot keep")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput(field, "contains a lone surrogate; not valid Unicode") from None
    check_size(size, field, max_bytes)
    encoded = JsonText(text)
    encoded.size = size
    return encoded


def check_size(size: int, field: str, max_bytes: int | None) -> None:
    if max_bytes is not None and size > max_bytes:
        raise InvalidInput(field, f"is {size} bytes of JSON, over the limit of {max_bytes}")


def loads(text: str | bytes | None) -> Any:
    """Decode stored JSON; ``None`` (no value stored) stays ``None``."""
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        value, end = _scan(text, 0)
    except (StopIteration, ValueError):  # leading whitespace, or not JSON: the full decoder says
        return _decode(text)
    return value if end == len(text) else _decode(text)


_ADVICE: tuple[tuple[tuple[type, ...], str], ...] = (
    ((datetime.datetime, datetime.date, datetime.time), "pass an ISO string (value.isoformat())"),
    ((set, frozenset), "pass a list (sorted(value))"),
    ((bytes, bytearray, memoryview), "pass text (value.decode()) or base64 text"),
    ((decimal.Decimal,), "pass a string (str(value)), or a float if rounding is fine"),
    ((uuid.UUID,), "pass a string (str(value))"),
)


def _advice(culprit: Any) -> str:
    """What is wrong with ``culprit``, and what would work instead."""
    if isinstance(culprit, float):
        return f"{culprit} is not JSON; pass None, or a string"
    kind = type(culprit).__name__
    for types, advice in _ADVICE:
        if isinstance(culprit, types):
            return f"{kind} is not JSON; {advice}"
    if isinstance(culprit, dict):
        return "a dict whose keys are not all strings is not JSON; use string keys"
    return f"{kind} is not JSON; pass dicts, lists, strings, numbers, booleans and None"


def _culprit(value: Any, path: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], Any] | None:
    """The first value inside ``value`` that JSON cannot carry, and its path."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, (list, tuple)):
        items: Iterable[tuple[str | int, Any]] = enumerate(value)
    elif isinstance(value, dict):
        if not all(isinstance(key, (str, int, float, bool)) or key is None for key in value):
            return path, value
        items = ((str(key), item) for key, item in value.items())
    else:
        return path, value
    for key, item in items:
        found = _culprit(item, (*path, key))
        if found is not None:
            return found
    return None


def _where(field: str, path: tuple[str | int, ...]) -> str:
    """``args[0]``, ``kwargs['when']``: where in ``field`` a value was refused
    (a task's ``data`` is shown from its ``args`` and ``kwargs``)."""
    if field == "data" and path and path[0] in ("args", "kwargs"):
        field, path = str(path[0]), path[1:]
    return field + "".join(f"[{key!r}]" for key in path)
