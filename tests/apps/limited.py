"""A tenure App for the concurrency-limit and ordered-key process tests. Each
task appends a line when it starts and one when it ends to the file named by
$TENURE_STINTS (O_APPEND: each line whole, whichever process writes it), so a
test reads every execution's interval, a killed one's start included."""

from __future__ import annotations

import asyncio
import os
import time

import tenure

app = tenure.App()


def _note(what: str, key: str, n: int) -> None:
    line = f"{what} {key} {n} {tenure.current().attempt} {os.getpid()} {time.time():.6f}\n"
    fd = os.open(os.environ["TENURE_STINTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _stint(key: str, n: int, seconds: float) -> None:
    _note("start", key, n)
    time.sleep(seconds)
    _note("end", key, n)


@app.task(topic="limited")
def topical(key: str, n: int, seconds: float) -> None:
    """A task of a topic whose limit the test sets."""
    _stint(key, n, seconds)


@app.task(topic="keyed", concurrency=tenure.Limit(key=lambda key, **_: key, max_running=2))
def keyed(key: str, n: int, seconds: float) -> None:
    """At most two of one key at once."""
    _stint(key, n, seconds)


@app.task(topic="keyed")
def free(key: str, n: int, seconds: float) -> None:
    """Under no limit: runs beside the limited ones."""
    _stint(key, n, seconds)


@app.task(topic="ordered", ordered_by=lambda key, **_: key, retries=2)
def ledger(key: str, n: int, seconds: float) -> None:
    """One of a key at a time, in enqueue order. The one numbered 5 of key
    "hold", on its first attempt, waits for the test to kill its worker."""
    if key == "hold" and n == 5 and tenure.current().attempt == 1:
        _note("start", key, n)
        time.sleep(120)
    _stint(key, n, seconds)


@app.task(topic="keyed")
async def afree(key: str, n: int, seconds: float) -> None:
    """As ``free``, a coroutine (for the async pool)."""
    _note("start", key, n)
    await asyncio.sleep(seconds)
    _note("end", key, n)


@app.task(topic="fair", fair_key=lambda key, **_: key)
def tenant(key: str, n: int, seconds: float) -> None:
    """Takes turns, within its priority, with the other keys' tasks."""
    _stint(key, n, seconds)
