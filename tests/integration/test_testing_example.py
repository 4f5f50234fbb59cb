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


@pytest.mark.slow
def test_an_app_that_cannot_be_loaded_stops_the_run_with_one_message(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntenure_app = "shop.tasks:app"\n'
    )
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "tasks.py").write_text(
        "import tenure\nraise KeyError('no such setting')\n"
    )
    (tmp_path / "test_one.py").write_text(
        "def test_a(tenure_app): ...\ndef test_b(tenure_app): ...\ndef test_c(tenure_app): ...\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 4, output
    assert output.count("Traceback (most recent call last)") == 1, output
    assert output.count("tenure_app = 'shop.tasks:app'") == 1, output
    assert "KeyError: 'no such setting'" in output
