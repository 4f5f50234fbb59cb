"""An App whose import takes a while in the children of a process pool, as
the import of a large application does; its store URL comes from $TENURE_URL."""

from __future__ import annotations

import multiprocessing
import os
import time

import tenure

IMPORT_SECONDS = 1.0
if multiprocessing.parent_process() is not None:  # a pool child, not the worker
    time.sleep(IMPORT_SECONDS)

app = tenure.App()


@app.task(topic="slow-import", timeout=0.5)
def quick() -> int:
    return os.getpid()
