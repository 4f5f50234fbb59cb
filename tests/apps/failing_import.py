"""An App whose import, in the children of a process pool, hangs or fails as
$TENURE_TEST_CHILD_IMPORT says ("hang" or "fail"); each child's attempt is
logged as a line in the file $TENURE_TEST_IMPORT_LOG. The worker process
itself imports it normally."""

from __future__ import annotations

import multiprocessing
import os
import time

import tenure

if multiprocessing.parent_process() is not None:  # a pool child
    with open(os.environ["TENURE_TEST_IMPORT_LOG"], "a") as log:
        log.write(f"{os.getpid()}\n")
    if os.environ["TENURE_TEST_CHILD_IMPORT"] == "hang":
        time.sleep(3600)
    raise RuntimeError("this App cannot be imported here")

app = tenure.App("sqlite:///:memory:")


@app.task(topic="pool")
def noop() -> None:
    """Never runs: no child gets this far."""
