"""The Huey instance the consumer processes load (``huey_consumer
benchmarks.compare.huey_app.huey``), on the store named by the environment."""

from __future__ import annotations

import os

from benchmarks.compare.huey_system import build
from benchmarks.compare.system import URL_ENV

huey, _, _ = build(os.environ[URL_ENV])
