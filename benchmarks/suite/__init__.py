"""tenure's own benchmark suite (``make bench``, ``python -m benchmarks.suite``).

It measures what a user of tenure feels, on each store of this machine:
enqueue throughput, how fast real worker processes drain a backlog, how long an
idle worker takes to pick a new task up, how soon a follower in another process
hears of a commit, whether a long history slows reserving down, and, for
context, what the database itself manages for the same kind of write.
:mod:`benchmarks.suite.runner` runs it; every other module measures one thing.
It lives beside the package, never in it: the wheel is the library, and the
suite, its SQL and its results are for the people who work on tenure.
"""

from __future__ import annotations

from pathlib import Path

from tenure.errors import TenureError

ROOT = Path(__file__).resolve().parents[2]
"""The checkout's root: worker processes run there, so they import this package."""
RESULTS = ROOT / "benchmarks" / "results"
"""Where the JSON documents go, whatever the current directory."""


class BenchError(TenureError):
    """A measurement could not be made (a worker died, a store never got there)."""
