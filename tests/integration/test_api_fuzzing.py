"""schemathesis, with every check it has (``st run --checks all``), against a
live ``tenure serve`` on each store: its examples, coverage, fuzzing and
stateful phases (the document's links: an enqueued task read, cancelled and
retried; a schedule added, read, edited and removed). Every answer must match
the document, every request the document calls valid must be accepted (or
refused only for what the store holds: 404, 409), every invalid one refused.

What the document cannot state is told to schemathesis in
:mod:`tests.integration.api_fuzzing`: how to draw a cron expression, that a
made-up cursor is not a valid request, and the live worker to scale."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tenure import Store
from tenure.store.types import WorkerInfo
from tests.integration.api_fuzzing import FUZZED_WORKER
from tests.integration.conftest import SERVED_TOKEN as TOKEN

pytestmark = pytest.mark.slow

EXAMPLES = 15
"""Cases drawn per operation and phase: about a minute a store, on two cores."""


def test_schemathesis_finds_no_failure_with_every_check(
    served: str, store: Store, tmp_path: Path
) -> None:
    store.worker_beat(WorkerInfo(id=FUZZED_WORKER, host="fuzz", pid=1))
    tool = shutil.which("st", path=str(Path(sys.executable).parent))
    assert tool, "schemathesis is a development dependency (pip install -e '.[dev]')"
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.integration.api_fuzzing",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # fmt: skip
    ran = subprocess.run(
        [tool, "run", f"{served}/api/openapi.json", "--checks", "all", "--no-color",
         "--max-examples", str(EXAMPLES), "-H", f"Authorization: Bearer {TOKEN}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    report = ran.stdout + ran.stderr
    assert ran.returncode == 0 and "No issues found" in report, report[-6000:]
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in report, report[-3000:]
