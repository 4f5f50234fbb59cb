"""The demo's tasks. Workers load them with ``--app examples.demo_tasks:app``."""

from __future__ import annotations

import random
import threading

import tenure
from tenure.retry import Backoff

app = tenure.App()  # sqlite:///tenure.db, or $TENURE_URL


@app.task(topic="images", retries=2)
def resize(image_id: int, width: int = 640) -> dict[str, int]:
    """Pretend to resize an image: 50 to 150 ms of work."""
    threading.Event().wait(random.uniform(0.05, 0.15))
    return {"image_id": image_id, "width": width}


@app.task(topic="uploads", retries=2, backoff=Backoff(base=0.2, maximum=1.0))
def upload(batch: int) -> str:
    """Fails on its first attempt for one batch in seven, then succeeds."""
    threading.Event().wait(random.uniform(0.02, 0.08))
    if batch % 7 == 0 and tenure.current().attempt == 1:
        raise ConnectionError(f"upload of batch {batch} timed out")
    return f"batch {batch} uploaded"
