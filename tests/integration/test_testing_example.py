"""The example project's own test suite (examples/signup) passes, run as its users
run it: pytest in its directory, with tenure's plugin found through the installed
package's entry point and configured by the project's ``tenure_app`` option."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "signup"


@pytest.mark.slow
def test_the_example_projects_suite_passes_with_the_plugin() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "TENURE_URL"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout, done.stdout
    assert not list(EXAMPLE.glob("tenure.db*")), "the example's tests wrote a store file"
