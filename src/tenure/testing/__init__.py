"""Test code that uses tenure without worker processes.

- :func:`run_until_empty` runs an App's queued tasks in the calling thread, the
  way a worker would (JSON in and out, middleware, hooks, retries, fencing).
- :func:`eager` makes every enqueue run its task at once, before it returns.
- :func:`isolated` points an App at a private store for the length of a test.
- The pytest plugin (loaded by installing tenure) offers the fixtures
  ``tenure_url``, ``tenure_app`` and ``tenure_eager``; see :mod:`tenure.testing.plugin`.
"""

from __future__ import annotations

from tenure.testing.drain import Drained, TasksRemain, run_until_empty
from tenure.testing.isolation import MEMORY_URL, eager, isolated

__all__ = ["MEMORY_URL", "Drained", "TasksRemain", "eager", "isolated", "run_until_empty"]
