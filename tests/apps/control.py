"""A tenure App for the tests of control from inside a task: ``tenure.Cancel``,
``retry_on``, ``tenure.current().cancelled`` and progress, each as a sync and an
``async def`` task. Its store URL comes from $TENURE_URL."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import tenure
from tenure.retry import Backoff

app = tenure.App()

QUICK = Backoff(base=0.05, maximum=0.1)
TRANSIENT = (TimeoutError, ConnectionError)


@app.task(topic="control", retries=3, backoff=QUICK)
def cancels(reason: str) -> None:
    raise tenure.Cancel(reason)


@app.task(topic="control", retries=3, backoff=QUICK)
async def async_cancels(reason: str) -> None:
    raise tenure.Cancel(reason)


def _raise_until(kind: str) -> int:
    """Raises ``kind`` on the first attempt; the next ones succeed."""
    attempt = tenure.current().attempt
    if attempt == 1:
        raise ConnectionError("refused") if kind == "connection" else ValueError("bad input")
    return attempt


@app.task(topic="control", retries=3, backoff=QUICK, retry_on=TRANSIENT)
def transient_only(kind: str) -> int:
    return _raise_until(kind)


@app.task(topic="control", retries=3, backoff=QUICK, retry_on=TRANSIENT)
async def async_transient_only(kind: str) -> int:
    return _raise_until(kind)


@app.task(topic="control", retries=3, backoff=QUICK, retry_on=ValueError, timeout=0.3)
def overruns_not_retried() -> None:
    time.sleep(30)


def _mark(folder: str, name: str) -> None:
    """Writes the time now to ``folder/name``, whole once it exists."""
    partial = Path(folder) / f".{name}"
    partial.write_text(repr(time.time()))
    os.replace(partial, Path(folder) / name)


@app.task(topic="control")
def watches_flag(folder: str) -> str:
    """Runs until told it is cancelled, then says when it learnt it."""
    _mark(folder, "started")
    while not tenure.current().cancelled:
        time.sleep(0.01)
    _mark(folder, "stopped")
    return "stopped"


@app.task(topic="control")
async def async_watches_flag(folder: str) -> str:
    _mark(folder, "started")
    try:
        while not tenure.current().cancelled:
            await asyncio.sleep(0.01)
    except asyncio.CancelledError:  # the async pools cancel the coroutine too
        pass
    _mark(folder, "stopped")
    return "stopped"


@app.task(topic="control")
def reports(folder: str) -> str:
    """Reports progress, then waits for the test to have seen it (its ``seen`` mark)."""
    tenure.current().progress(0.4, "step 2 of 5")
    _mark(folder, "reported")
    while not (Path(folder) / "seen").exists():
        time.sleep(0.01)
    tenure.current().progress(1.0)
    return "reported"


@app.task(topic="control")
async def async_reports(folder: str) -> str:
    tenure.current().progress(0.4, "step 2 of 5")
    _mark(folder, "reported")
    while not (Path(folder) / "seen").exists():
        await asyncio.sleep(0.01)
    tenure.current().progress(1.0)
    return "reported"
