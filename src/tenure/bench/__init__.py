"""The benchmark suite behind ``tenure bench`` (and ``make bench``).

It measures what a user of tenure feels, on each store of this machine:
enqueue throughput, how fast real worker processes drain a backlog, how long an
idle worker takes to pick a new task up, whether a long history slows reserving
down, and, for context, what the database itself manages for the same kind of
write. :mod:`tenure.bench.suite` runs it; every other module measures one thing.
"""

from __future__ import annotations

from tenure.errors import TenureError


class BenchError(TenureError):
    """A measurement could not be made (a worker died, a store never got there)."""
