"""A tenure App for the tests of workflows with real worker processes: a
group's members (every tenth fails), a callback that records each time it
runs, and links of a chain. Its store URL comes from $TENURE_URL; the
callback appends to the file $TENURE_FLOW_LOG."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import tenure
from tenure.retry import Backoff

app = tenure.App()


@app.task(topic="flows", retries=2, backoff=Backoff(base=0.05, maximum=0.1))
def square(number: int) -> int:
    """Every tenth fails, three times; the others may be cut short by a kill once
    or twice, and are run again."""
    time.sleep(0.05)
    if number % 10 == 0:
        raise ValueError(f"{number} is round")
    return number * number


@app.task(topic="flows")
def collect(outcomes: list[tenure.Ended]) -> dict[str, int]:
    """Counts the outcomes by status, and notes that it ran (once per execution)."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status.value] = counts.get(outcome.status.value, 0) + 1
    counts["sum"] = sum(outcome.result for outcome in outcomes if outcome.ok)
    with Path(os.environ["TENURE_FLOW_LOG"]).open("a") as log:
        log.write(json.dumps({"task": tenure.current().task.id, **counts}) + "\n")
    return counts


@app.task(topic="flows")
def step(value: int, add: int) -> int:
    """A link of a chain; a negative ``add`` fails it (and stops the chain)."""
    time.sleep(0.05)
    if add < 0:
        raise ValueError(f"cannot add {add}")
    return value + add


@app.task(topic="flows")
def total(values: list[int]) -> int:
    """A fan-in: what a group inside a chain gave, summed."""
    return sum(values)
