"""``python -m chaos`` as ``make chaos`` runs it: a mistake on its command line is
one line on stderr and exit code 2, never a traceback, and nothing runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chaos import ROOT


@pytest.mark.parametrize(
    "argv",
    [
        ["--only", "nope"],
        ["--stores", "mysql"],
        ["--only", "pg-crash", "--stores", "sqlite"],
        ["--stores", ""],
        ["--unknown"],
    ],
)
def test_a_mistake_on_the_command_line_is_one_line(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chaos", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("python -m chaos: ") and done.stdout == ""
