"""When a failed attempt is tried again: exponential backoff with jitter.

Each retry also lowers the task's priority by ``priority_step`` (one by default),
so a task that keeps failing yields to fresh work; set it to 0 to keep priority.
tenure's own loops that wait for something (a store back after an outage, a
listener to reconnect, a task to end) pace themselves with the same class.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from tenure.checks import integer, number, seconds


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before retry ``n`` (n = 1 for the first retry) is
    ``min(maximum, base * factor ** (n - 1))``, scaled down by up to ``jitter``
    (0.5: a random 50 to 100 % of it), so retries of many tasks spread out."""

    base: float = 1.0
    factor: float = 2.0
    maximum: float = 600.0
    jitter: float = 0.5
    priority_step: int = 1

    def __post_init__(self) -> None:
        seconds(self.base, "backoff.base", allow_zero=True)
        seconds(self.maximum, "backoff.maximum", allow_zero=True)
        number(self.factor, "backoff.factor", 1.0, 100.0)
        number(self.jitter, "backoff.jitter", 0.0, 1.0)
        integer(self.priority_step, "backoff.priority_step", minimum=0)

    def delay(self, retry: int, rand: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        exponent = max(0, retry - 1)
        full = min(self.maximum, self.base * self.factor ** min(exponent, 64))
        spread = (rand or random).uniform(1.0 - self.jitter, 1.0)
        return full * spread

    def delays(self, rand: random.Random | None = None) -> Iterator[float]:
        """The waits of a loop that tries until it works: ``delay(1)``,
        ``delay(2)``, and so on, without end (a loop starts a new one to
        begin again from ``base``)."""
        return (self.delay(retry, rand) for retry in itertools.count(1))
