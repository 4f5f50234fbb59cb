"""The typed API holds for a user's module under mypy --strict: documented uses
type-check with the types they promise (``tests/typed_api/user_module.py``), and each
misuse in ``tests/typed_api/misuse.py`` is reported on its line with its code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

HERE = Path(__file__).resolve().parents[1] / "typed_api"
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
MARK = re.compile(r"#\s*error:\s*(?P<code>[a-z-]+)")


def mypy_errors(path: Path) -> set[tuple[int, str]]:
    """(line, code) of every error mypy --strict reports in ``path``."""
    stdout, stderr, _ = api.run(
        ["--strict", "--no-error-summary", "--hide-error-context", str(path)]
    )
    assert not stderr, stderr
    found = set()
    for line in stdout.splitlines():
        match = ERROR.match(line)
        if match and Path(match["file"]).name == path.name:
            found.add((int(match["line"]), match["code"]))
        else:
            assert ": note:" in line or not line.strip(), f"unexpected mypy output: {line}"
    return found


def marked(path: Path) -> set[tuple[int, str]]:
    return {
        (number, match["code"])
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if (match := MARK.search(text))
    }


@pytest.mark.slow
def test_documented_uses_check_with_the_promised_types() -> None:
    assert mypy_errors(HERE / "user_module.py") == set()


@pytest.mark.slow
def test_each_misuse_is_an_error_on_its_line() -> None:
    expected = marked(HERE / "misuse.py")
    assert len(expected) >= 10
    found = mypy_errors(HERE / "misuse.py")
    assert {line for line, _ in found} == {line for line, _ in expected}
    assert expected <= found
