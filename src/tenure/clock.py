"""Wall-clock helpers: one notion of "now" and conversions for stores that keep epochs.

Wall time is used only for what it is good for (delays, timings, display). Nothing
that decides whether a lease is alive compares one machine's wall clock with a
timestamp written by another; the supervisor uses each process's monotonic clock.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current wall time as an aware UTC datetime."""
    return datetime.now(UTC)


def to_epoch(moment: datetime) -> float:
    """Seconds since the Unix epoch for an aware datetime."""
    return moment.timestamp()


def from_epoch(seconds: float) -> datetime:
    """An aware UTC datetime from seconds since the Unix epoch."""
    return datetime.fromtimestamp(seconds, UTC)


def epoch_or_now(moment: datetime | None) -> float:
    """``moment`` as an epoch, or the current wall time when it is None."""
    return time.time() if moment is None else moment.timestamp()


def spoken(seconds: float) -> str:
    """How long ``seconds`` is, as people read it: ``18 ms``, ``2.4 s``,
    ``42 s``, ``3.5 min``, ``2.1 h``, ``4.0 d`` (the command line and the
    dashboard write every duration and age so)."""
    seconds = max(seconds, 0.0)
    if seconds < 1:
        milliseconds = seconds * 1000
        return f"{milliseconds:.1f} ms" if milliseconds < 10 else f"{milliseconds:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover
