"""The README's command reference is the parser's own: regenerate it with
``python -m tenure.cli.reference`` (or TENURE_UPDATE_SNAPSHOTS=1 here)."""

from __future__ import annotations

import os
from pathlib import Path

from tenure.cli.reference import END, START, markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_carries_the_reference_the_parser_makes() -> None:
    text = README.read_text()
    begin, end = text.index(START), text.index(END) + len(END) + 1
    made = markdown()
    if os.environ.get("TENURE_UPDATE_SNAPSHOTS") and text[begin:end] != made:
        README.write_text(text[:begin] + made + text[end:])
        text = README.read_text()
    assert text[begin:end] == made, "run python -m tenure.cli.reference and paste it in"


def test_every_option_is_explained() -> None:
    rows = [line for line in markdown().splitlines() if line.startswith("| `")]
    assert rows and all(not line.endswith("|  |") for line in rows), [
        line for line in rows if line.endswith("|  |")
    ]
