"""Opaque keyset cursors for paging through task lists, and the event log's.

A cursor carries the position after the last row returned, bound to the query it
came from (a hash of its filters) and sealed with a checksum, so a truncated,
edited or foreign cursor is refused with ``InvalidInput("cursor", …)`` instead of
silently paging from the wrong place.

An event cursor is a position in the commit-safe order of the log rather than in
one query's rows, so it carries no scope and no seal: any event's cursor resumes
any follower, and one that does not parse is refused with
``InvalidInput("after", …)``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from tenure.errors import InvalidInput

_VERSION = 1
_SEAL_KEY = b"tenure-cursor-v1"


def scope_of(filters: Any) -> str:
    """A short digest naming the query a cursor belongs to."""
    text = json.dumps(filters, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _seal(body: bytes) -> str:
    return hmac.new(_SEAL_KEY, body, hashlib.blake2b).hexdigest()[:16]


def encode(position: int, scope: str) -> str:
    """A cursor that resumes after ``position`` in the query named by ``scope``."""
    body = json.dumps([_VERSION, scope, position], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(body).decode().rstrip("=") + "." + _seal(body)


def decode(cursor: str, scope: str) -> int:
    """The position a cursor resumes after; ``InvalidInput`` if it is not genuine."""
    if not isinstance(cursor, str) or not cursor.isascii() or cursor.count(".") != 1:
        raise InvalidInput("cursor", "malformed cursor")
    encoded, seal = cursor.split(".")
    try:
        body = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (ValueError, TypeError):
        raise InvalidInput("cursor", "malformed cursor") from None
    if not hmac.compare_digest(seal, _seal(body)):
        raise InvalidInput("cursor", "cursor was altered or is not a tenure cursor")
    try:
        version, cursor_scope, position = json.loads(body)
    except (ValueError, TypeError):
        raise InvalidInput("cursor", "malformed cursor") from None
    if version != _VERSION or isinstance(position, bool) or not isinstance(position, int):
        raise InvalidInput("cursor", "cursor from an unsupported version")
    if not 0 <= position < 2**63:
        raise InvalidInput("cursor", "cursor position out of range")
    if cursor_scope != scope:
        raise InvalidInput("cursor", "cursor belongs to a query with other filters")
    return position


EVENT_START = (0, 0)
"""The position before every event: ``event_list(after=None)`` starts here."""

EVENT_END = (2**64 - 1, 2**63 - 1)
"""The position after every event: ``event_tail(before=None)`` ends here."""

_EVENT_CURSOR_DIGITS = 20  # 2**64 - 1 has 20 decimal digits


def event_cursor(xid: int, event_id: int) -> str:
    """The cursor that resumes after the event ``event_id`` written by the
    transaction ``xid``: ``"<xid>.<id>"``. Callers treat it as opaque; it is
    readable only so that an operator can tell which transaction wrote an event.
    SQLite serialises writers, so ids commit in order and its ``xid`` is 0."""
    return f"{xid}.{event_id}"


def event_position(cursor: str) -> tuple[int, int]:
    """The ``(xid, id)`` an event cursor resumes after; ``InvalidInput("after", …)``
    if it is not one ``event_cursor`` makes, so a follower given a garbled
    cursor stops instead of re-reading or skipping the log."""
    if not isinstance(cursor, str) or not cursor.isascii() or cursor.count(".") != 1:
        raise InvalidInput("after", "malformed event cursor")
    xid, event_id = cursor.split(".")
    if not all(part.isdigit() and len(part) <= _EVENT_CURSOR_DIGITS for part in (xid, event_id)):
        raise InvalidInput("after", "malformed event cursor")
    position = int(xid), int(event_id)
    if position[0] >= 2**64 or position[1] >= 2**63:
        raise InvalidInput("after", "event cursor position out of range")
    return position
