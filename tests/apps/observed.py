"""An App with the observer's two example queries, for scheduler tests: the done
tasks, and the tasks created at least a second before the run. Each runs once a
day at the time of day (UTC) in $TENURE_TEST_DONE_AT and $TENURE_TEST_AGED_AT."""

from __future__ import annotations

import os

import tenure

app = tenure.App()

app.observe("tasks-that-done", status="done", at=os.environ.get("TENURE_TEST_DONE_AT"))
app.observe(
    "tasks-that-created-at-least-1second-before",
    age=1,
    at=os.environ.get("TENURE_TEST_AGED_AT"),
)
