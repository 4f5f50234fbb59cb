"""Producers: processes that enqueue the no-op task at a fixed rate, in small
batches on a fixed schedule, and send the latency of each call to the
measuring process once per sample."""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.queues import Queue
from typing import Any

from benchmarks.suite.app import bench_app

CALLS_PER_SECOND = 50
"""Enqueue calls a producer makes each second; the rate sets their size."""


def produce(url: str, rate: float, seconds: float, every: float, out: Queue[Any]) -> None:
    """Enqueue ``rate`` tasks a second for ``seconds``, putting the latencies
    of the calls made in each ``every`` seconds on ``out``."""
    app, noop = bench_app(url)
    batch = max(1, round(rate / CALLS_PER_SECOND))
    period = batch / rate
    began = time.monotonic()
    window_end, latencies, calls = began + every, [], 0
    while (now := time.monotonic()) < began + seconds:
        due = began + calls * period
        if due > now:
            time.sleep(due - now)
        started = time.perf_counter()
        noop.enqueue_many([noop.call() for _ in range(batch)])
        latencies.append(time.perf_counter() - started)
        calls += 1
        if time.monotonic() >= window_end:
            out.put(latencies)
            latencies, window_end = [], window_end + every
    out.put(latencies)
    app.close()


class Producers:
    """``count`` producer processes sharing ``rate`` between them."""

    def __init__(self, url: str, rate: float, seconds: float, every: float, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.latencies: Queue[Any] = context.Queue()
        share = rate / count
        self.processes = [
            context.Process(target=produce, args=(url, share, seconds, every, self.latencies))
            for _ in range(count)
        ]

    def start(self) -> None:
        for process in self.processes:
            process.start()

    def drain(self) -> list[float]:
        """The latencies sent since the last call."""
        found: list[float] = []
        while not self.latencies.empty():
            found += self.latencies.get()
        return found

    def stop(self) -> None:
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
