"""How big each measurement is: the issue's sizes, and small ones for a smoke run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sizes:
    """Work per repetition of each measurement."""

    enqueue_single: int = 2_000
    """Tasks enqueued one call each."""
    enqueue_bulk: int = 1_000
    """Tasks in the one ``enqueue_many`` call."""
    enqueue_producers: int = 4_000
    """Tasks enqueued one call each by many producers together (threads, processes)."""
    drain: int = 20_000
    """Tasks queued before the workers start."""
    pickup: int = 200
    """Tasks enqueued one at a time to an idle worker..."""
    pickup_gap: float = 0.02
    """...this many seconds apart."""
    follow: int = 500
    """Tasks enqueued one at a time while another process follows the event log..."""
    follow_gap: float = 0.003
    """...this many seconds apart: a pace that measures latency, not throughput."""
    follow_backlog: int = 60_000
    """Tasks a worker drains while the follow latency is measured again (it must
    outlast the enqueues, so that the worker is busy from the first to the last)."""
    histories: tuple[int, ...] = (10_000, 1_000_000)
    """Finished tasks in the store while reserve is timed."""
    reserve_calls: int = 500
    """Single-task reserve calls timed per repetition."""
    limit_seconds: float = 5.0
    """How long each run of the database's own write loop lasts."""
    memory_drain: int = 1_000_000
    """Tasks one worker drains while its resident memory is watched (once)."""


FULL = Sizes()
QUICK = Sizes(
    enqueue_single=100,
    enqueue_bulk=1_000,
    enqueue_producers=200,
    drain=500,
    pickup=20,
    follow=50,
    follow_backlog=5_000,
    histories=(1_000, 10_000),
    reserve_calls=50,
    limit_seconds=0.5,
    memory_drain=20_000,
)


@dataclass(frozen=True, slots=True)
class Plan:
    """What every measurement is told: its sizes, how many repetitions, and
    where to say how each repetition went (progress for the person waiting)."""

    sizes: Sizes
    repeat: int
    say: Callable[[str], None] = print
