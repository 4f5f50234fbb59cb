"""An App with a hook for every kind and two middlewares, for the hooks tests.
Each hook and middleware appends one JSON line to the file named by
$TENURE_TEST_JOURNAL, so the test reads what happened in the worker process."""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import tenure
from tenure.hooks import HOOK_KINDS, Middleware, Outcome
from tenure.retry import Backoff

app = tenure.App()


def journal(**line: Any) -> None:
    path = os.environ.get("TENURE_TEST_JOURNAL")
    if path:
        with Path(path).open("a") as file:
            file.write(json.dumps(line) + "\n")


def record(outcome: Outcome) -> None:
    error = None if outcome.error is None else outcome.error.type
    journal(
        hook=outcome.kind,
        task=outcome.task.id,
        error=error,
        result=outcome.result,
        delay=outcome.delay,
    )


for kind in HOOK_KINDS:
    app.on(kind)(record)  # type: ignore[arg-type]


@app.on("failed")
def broken_hook(outcome: Outcome) -> None:
    raise RuntimeError("a hook that raises is logged, never fatal")


class ErrorTracker(Middleware):
    """What an error tracker such as Sentry does: see the exception, with its
    frames, where it is raised."""

    def execute(self, task: tenure.Task) -> AbstractContextManager[object]:
        return self._watch(task)

    @contextmanager
    def _watch(self, task: tenure.Task) -> Iterator[None]:
        try:
            yield
        except (tenure.Snooze, tenure.Retry):
            raise  # steering, not errors
        except Exception as exc:
            frames = [frame.name for frame in traceback.extract_tb(exc.__traceback__)]
            journal(captured=type(exc).__name__, task=task.id, frames=frames, pid=os.getpid())
            raise


class RequestId(Middleware):
    """Carries a value from the enqueuing process to the execution."""

    def enqueue(self, name: str, headers: dict[str, str]) -> None:
        headers["request-id"] = f"req-for-{name.rsplit('.', 1)[-1]}"


app.add_middleware(ErrorTracker())
app.add_middleware(RequestId())

QUICK = Backoff(base=0.05, maximum=0.1)


@app.task(topic="hooked")
def succeeds() -> dict[str, str]:
    return {"request-id": tenure.current().headers.get("request-id", "")}


@app.task(topic="hooked", retries=1, backoff=QUICK)
def fails() -> None:
    raise ValueError("bad input")


@app.task(topic="hooked")
def snoozes(marker: str) -> str:
    if not Path(marker).exists():
        Path(marker).touch()
        raise tenure.Snooze(0.1)
    return "woken"


@app.task(topic="hooked")
def waits(gate: str) -> None:
    while not Path(gate).exists():
        tenure.current()  # a task that polls a file until cancelled
        import time

        time.sleep(0.02)
