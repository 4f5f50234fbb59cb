"""A tenure App for worker tests. Its store URL comes from $TENURE_URL."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import tenure
from tenure.retry import Backoff

app = tenure.App()

QUICK = Backoff(base=0.05, maximum=0.2)


@app.task(topic="basic")
def add(a: int, b: int) -> int:
    return a + b


@app.task(topic="basic", retries=2, backoff=QUICK)
def flaky(fail_times: int) -> dict[str, Any]:
    """Fails until its attempt number passes ``fail_times``."""
    attempt = tenure.current().attempt
    if attempt <= fail_times:
        raise ValueError(f"attempt {attempt} fails")
    return {"attempt": attempt}


@app.task(topic="basic", retries=1, backoff=QUICK)
def always_fails() -> None:
    raise RuntimeError("always")


@app.task(topic="basic", retries=1, backoff=QUICK)
def retries_later(seconds: float) -> dict[str, Any]:
    """Asks for another attempt ``seconds`` later (not its backoff's); ends on the next."""
    attempt = tenure.current().attempt
    if attempt == 1:
        raise tenure.Retry(in_=seconds)
    return {"attempt": attempt}


@app.task(topic="basic")
async def async_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


@app.task(topic="basic")
async def async_whoami() -> dict[str, Any]:
    """Says which process, thread and lease ran it, asked from inside a coroutine."""
    await asyncio.sleep(0)
    current = tenure.current()
    return {
        "pid": os.getpid(),
        "thread": threading.current_thread().name,
        "token": current.fencing_token,
        "attempt": current.attempt,
    }


@app.task(topic="basic")
def whoami() -> dict[str, Any]:
    current = tenure.current()
    return {"pid": os.getpid(), "token": current.fencing_token, "attempt": current.attempt}


@app.task(topic="gpu-work", tags={"gpu"})
def on_gpu() -> str:
    return "gpu"


def wait_for_file(path: str, limit: float = 60) -> None:
    """Wait until ``path`` exists (an Event wait, which works under libfaketime)."""
    deadline = time.monotonic() + limit
    pause = threading.Event()
    while not os.path.exists(path) and time.monotonic() < deadline:
        pause.wait(0.01)


@app.task(topic="basic")
def blocks(gate: str, result: str = "late", began: str | None = None) -> str:
    """Runs until the file ``gate`` exists (the test decides when); makes the
    file ``began``, if named, once it runs (reserved is not yet running)."""
    if began is not None:
        Path(began).touch()
    wait_for_file(gate)
    return result


@app.task(topic="basic")
def blocks_here(gate: str, pid_file: str) -> str:
    """Writes the pid of the process it runs in to ``pid_file``, then runs
    until ``gate`` exists (never, if the test does not make it)."""
    Path(pid_file).write_text(str(os.getpid()))
    wait_for_file(gate, limit=600)
    return "gate open"


@app.task(topic="basic", retries=3)
def holds(gate: str) -> dict[str, Any]:
    """Runs until ``gate`` exists; says which process and lease finished it."""
    wait_for_file(gate)
    current = tenure.current()
    return {"pid": os.getpid(), "token": current.fencing_token}


@app.task(topic="basic")
def snoozes_then_runs(marker: str, seconds: float) -> str:
    """Snoozes on its first run (leaving ``marker``), finishes on the next."""
    if not os.path.exists(marker):
        with open(marker, "w") as out:
            out.write(str(tenure.current().attempt))
        raise tenure.Snooze(seconds)
    return "after snooze"


@app.task(topic="basic", timeout=0.3)
def overruns(folder: str) -> str:
    """Passes its timeout: leaves ``pid`` (the process running it), then waits
    for the file ``gate`` and, if it ever gets there, leaves ``returned``."""
    Path(folder, "pid").write_text(str(os.getpid()))
    wait_for_file(str(Path(folder, "gate")))
    Path(folder, "returned").write_text("the body ran to its end")
    return "late"


@app.task(topic="basic", timeout=0.3)
async def async_overruns(folder: str) -> str:
    """Passes its timeout; leaves ``cancelled`` when its coroutine is cancelled."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        Path(folder, "cancelled").write_text("CancelledError")
        raise
    return "late"


@app.task(topic="basic", timeout=1.0)
def naps(seconds: float) -> str:
    """Sleeps within its timeout (which counts from its start, not its reservation)."""
    time.sleep(seconds)
    return "rested"
