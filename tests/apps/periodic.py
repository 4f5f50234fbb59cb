"""An App with a task enqueued every second (cron's optional sixth field is
seconds), for scheduler tests."""

from __future__ import annotations

import tenure

app = tenure.App()


@app.periodic("* * * * * *")
@app.task(topic="ticks")
def every_second() -> None:
    return None
