"""Loaded (via PYTHONPATH) only by test processes run under libfaketime.

With FAKETIME_DONT_FAKE_MONOTONIC=1 the wall clock is skewed and the monotonic
clock is real, as clock-skew tests want; but Python 3.11's ``time.sleep`` then
fails with EINVAL (it sleeps until an absolute monotonic time, which
libfaketime mangles). ``select`` waits on a relative timeout and is unaffected.
"""

from __future__ import annotations

import os
import select
import time

if "faketime" in os.environ.get("LD_PRELOAD", ""):

    def _sleep(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            select.select([], [], [], left)

    time.sleep = _sleep
