"""Opaque keyset cursors for paging through task lists.

A cursor carries the position after the last row returned, bound to the query it
came from (a hash of its filters) and sealed with a checksum, so a truncated,
edited or foreign cursor is refused with ``InvalidInput("cursor", …)`` instead of
silently paging from the wrong place.
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
