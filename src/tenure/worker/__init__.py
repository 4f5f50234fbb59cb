"""The worker runtime: reserve, run, keep alive, complete, shut down gracefully."""

from __future__ import annotations

from tenure.worker.worker import Worker

__all__ = ["Worker"]
