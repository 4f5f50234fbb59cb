"""JSON encoding of payloads and results: the only format tenure stores.

Strict on purpose: NaN and Infinity, NUL characters (PostgreSQL's jsonb refuses
them), lone surrogates and values JSON cannot carry are refused with
:class:`~tenure.errors.InvalidInput` instead of being stored in a form that would
not read back as written.
"""

from __future__ import annotations

import json
from typing import Any

from tenure.errors import InvalidInput


class JsonText(str):
    """JSON text as :func:`dumps` made it, checked and measured (``size`` in UTF-8
    bytes): a worker encodes a task's result once, to check it, and hands this to
    the store, which then need not encode it again."""

    size: int


_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_decode = json.JSONDecoder().decode


def dumps(value: Any, field: str, max_bytes: int | None = None) -> JsonText:
    """Encode ``value`` as compact JSON; ``field`` names it in any error."""
    try:
        text = _encoder.encode(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(field, f"not JSON-serializable: {exc}") from None
    except RecursionError:
        raise InvalidInput(field, "nested too deeply to serialize") from None
    if "\\u0000" in text or "\x00" in text:
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
    return _decode(text)
