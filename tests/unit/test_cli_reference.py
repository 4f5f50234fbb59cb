"""The documentation's command reference is the parser's own: regenerate it with
``python -m tenure.cli.reference`` (or TENURE_UPDATE_SNAPSHOTS=1 here)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from tenure.cli import build_parser
from tenure.cli.reference import END, START, markdown

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"


def _carried(text: str) -> tuple[int, int]:
    """Where the generated reference begins and ends in the page's ``text``."""
    return text.index(START), text.index(END) + len(END) + 1


def test_the_docs_carry_the_reference_the_parser_makes() -> None:
    text = PAGE.read_text()
    begin, end = _carried(text)
    made = markdown()
    if os.environ.get("TENURE_UPDATE_SNAPSHOTS") and text[begin:end] != made:
        PAGE.write_text(text[:begin] + made + text[end:])
        text = PAGE.read_text()
        begin, end = _carried(text)
    assert text[begin:end] == made, (
        "TENURE_UPDATE_SNAPSHOTS=1 pytest tests/unit/test_cli_reference.py rewrites it"
    )


def test_every_option_is_explained() -> None:
    rows = [line for line in markdown().splitlines() if line.startswith("| `")]
    assert rows and all(not line.endswith("|  |") for line in rows), [
        line for line in rows if line.endswith("|  |")
    ]


def test_every_command_has_a_section_its_overview_links_to() -> None:
    made = markdown()
    parser = build_parser(layered=False)
    [subcommands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    names = sorted(subcommands.choices)
    assert names and "worker" in names
    for name in names:
        assert f"\n### `tenure {name}`\n" in made
        assert f"| [`tenure {name}`](#tenure-{name}) |" in made
    linked = re.findall(r"\]\(#tenure-([\w-]+)\)", made)
    assert sorted(linked) == names
