"""Time-sortable task ids.

A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits, so
ids sort by creation time and index well. Within one process ids are also
strictly increasing: when the clock has not moved on (or moved back), the next id
is the previous one plus one (the RFC's "monotonic random" method), so tasks
created in one call sort in the order given. The standard library gains
``uuid.uuid7`` only in Python 3.14; this is the same layout for 3.11+.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time

_VERSION_BITS = 0x7 << 76
_VARIANT_BITS = 0x2 << 62
_FIXED_BITS = _VERSION_BITS | _VARIANT_BITS
_RANDOM_A = ((1 << 12) - 1) << 64  # 12 random bits between version and variant
_RANDOM_B = (1 << 62) - 1  # 62 random bits after the variant
_RANDOM_BITS = _RANDOM_A | _RANDOM_B
_MILLIS = (1 << 48) - 1
_BUFFERED = 4096
"""Bytes of the system's randomness read at once, 16 per id: a system call per
id was a fifth of the time making one took."""

_lock = threading.Lock()
_last = 0
_random = b""
_used = 0


class NewId(str):
    """An id :func:`new_id` made, not one a caller chose: no transaction of the
    caller's can hold a row with it, so its task may share a commit with other
    callers' (``tenure.store.grouping``). Compares, hashes and encodes as the
    string it is."""

    __slots__ = ()


def new_id() -> NewId:
    """A new UUIDv7, greater than any this process made before, as a 36-character string."""
    global _last, _random, _used  # noqa: PLW0603 - the monotonic state is process-wide by design
    millis = time.time_ns() // 1_000_000
    with _lock:
        if _used == len(_random):
            _random, _used = os.urandom(_BUFFERED), 0
        rand = int.from_bytes(_random[_used : _used + 16], "big")
        _used += 16
        value = (millis & _MILLIS) << 80 | _FIXED_BITS | rand & _RANDOM_BITS
        if value <= _last:
            value = _next_after(_last)
        _last = value
    # str(uuid.UUID(int=value)) in a fraction of its time: bytes.hex is cheaper
    # than formatting the int (docs/benchmarks.md, the levers in the code)
    digits = value.to_bytes(16, "big").hex()
    return NewId(f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}")


def _forget() -> None:
    """In a forked child: its own randomness and its own sequence. The parent's
    unread random bytes, or its last id, would otherwise make the child's next
    ids the very ones the parent makes next."""
    global _lock, _last, _random, _used
    _lock, _last, _random, _used = threading.Lock(), 0, b"", 0


os.register_at_fork(after_in_child=_forget)


def _next_after(previous: int) -> int:
    """The smallest valid v7 value above ``previous`` (carrying over the fixed bits)."""
    value = previous + 1
    if value & _VARIANT_BITS != _VARIANT_BITS or (value >> 62) & 0x3 != 0x2:
        value = ((previous | _RANDOM_B) + (1 << 64)) & ~((1 << 64) - 1) | _VARIANT_BITS
    if (value >> 76) & 0xF != 0x7:
        value = (value | _RANDOM_A) + (1 << 80) & ~((1 << 80) - 1) | _VERSION_BITS | _VARIANT_BITS
    return value


def default_owner() -> str:
    """A name for this process as a lease owner: host, pid and a random part, so
    two processes never share one even with the same host name and pid."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
