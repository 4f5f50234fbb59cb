"""The package map in docs/contributing.md stays true to the tree: every folder
and file it names exists, every package folder has its row, and its layers are
the import contract's, in its order."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
CODE = re.compile(r"`([^`]+)`")
UNLISTED = {"src/tenure", "src/tenure/contrib"}
"""Folders that only hold others (the map names what is inside)."""


def section(heading: str, text: str = PAGE) -> str:
    """The text under ``heading`` up to the next heading of its level or above."""
    level = len(heading.split(" ", maxsplit=1)[0])
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    ends = [m.start() for m in re.finditer(rf"^#{{1,{level}}} ", text[start:], re.M)]
    return text[start : start + ends[0]] if ends else text[start:]


def first_cells(table: str) -> list[str]:
    """The first cell of each row of a Markdown table, header and rule left out."""
    rows = [line for line in table.splitlines() if line.startswith("|")]
    return [row.split("|")[1].strip() for row in rows[2:]]


MAP = section("## The map")


def test_the_layers_are_the_import_contracts() -> None:
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = [
        {name.strip() for name in layer.split("|")} for layer in contract["contracts"][0]["layers"]
    ]
    mapped = [set(CODE.findall(cell)) for cell in first_cells(section("### Layers", MAP))]
    assert mapped == layers


def test_every_folder_named_exists_and_every_package_folder_is_named() -> None:
    named = [CODE.findall(cell)[0].rstrip("/") for cell in first_cells(section("### Folders", MAP))]
    assert [name for name in named if not (ROOT / name).is_dir()] == []
    packages = {
        str(found.parent.relative_to(ROOT))
        for top in ("src", "tests", "chaos", "benchmarks")
        for found in (ROOT / top).rglob("__init__.py")
        if not {"migrations", "management"} & set(found.parent.parts)
    }
    assert sorted(packages - UNLISTED - set(named)) == []


def test_every_path_in_where_to_add_exists() -> None:
    paths = [code for code in CODE.findall(section("### Where to add", MAP)) if "/" in code]
    assert len(paths) >= 10
    for path in paths:
        # NAME stands for what is added: the folder it goes in must exist.
        there = ROOT / path.split("NAME")[0] if "NAME" in path else ROOT / path
        assert there.exists(), path
