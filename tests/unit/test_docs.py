"""The documentation site and the README: the site builds with ``mkdocs build
--strict`` and says no WARNING (broken links and anchors, pages left out of the
navigation, unresolved references all warn), every Python example compiles,
the API reference has a place for every name ``tenure`` exports, and the
README's links lead somewhere."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tenure
import tenure.store
from tenure.cli.reference import START

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
API = DOCS / "reference" / "api"

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M
)
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
DIRECTIVE = re.compile(r"^::: (?P<identifier>[\w.]+)", re.M)


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def python_blocks(text: str) -> list[str]:
    """The bodies of the ```python blocks of a Markdown text, dedented (blocks
    inside tabs and admonitions are indented)."""
    return [
        textwrap.dedent(found["body"])
        for found in FENCE.finditer(text)
        if found["lang"] in ("python", "py")
    ]


@pytest.mark.slow
def test_the_site_builds_strictly_without_a_warning(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict"]
    built = subprocess.run(
        [*command, "--site-dir", str(tmp_path / "site")],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = built.stdout + built.stderr
    assert built.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    assert (tmp_path / "site" / "objects.inv").is_file()  # the API reference was rendered


@pytest.mark.parametrize("page", [*pages(), README], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_example_compiles(page: Path) -> None:
    for number, block in enumerate(python_blocks(page.read_text()), 1):
        try:
            compile(block, f"{page.name} block {number}", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError as exc:
            pytest.fail(f"{page.relative_to(ROOT)}, Python block {number}: {exc}\n{block}")


def test_the_api_reference_has_a_place_for_every_exported_name() -> None:
    documented = {
        found["identifier"]
        for page in API.glob("*.md")
        for found in DIRECTIVE.finditer(page.read_text())
    }
    assert "tenure.store" in documented  # its members, tenure.store.__all__, with it
    missing = [
        name
        for name in tenure.__all__
        if name != "__version__"
        and f"tenure.{name}" not in documented
        and name not in tenure.store.__all__
    ]
    assert not missing, f"add ::: tenure.NAME to a page of {API.relative_to(ROOT)}: {missing}"


def test_the_cli_reference_page_is_the_generated_one() -> None:
    assert START in (DOCS / "reference" / "cli.md").read_text()  # see test_cli_reference.py


def test_the_readme_installs_starts_and_links_into_the_docs() -> None:
    text = README.read_text()
    assert "pip install tenure" in text
    assert "pip install 'tenure[postgres]'" in text
    assert "## Quick start" in text  # run as written by tests/integration/test_quick_start.py
    assert text.index("## Quick start") < text.index("make test")  # users first
    targets = [found["target"] for found in LINK.finditer(text)]
    local = [t for t in targets if "://" not in t and not t.startswith("#")]
    assert any(t.startswith("docs/") for t in local)
    broken = [t for t in local if not (ROOT / t.split("#")[0]).exists()]
    assert not broken, f"README links to files that do not exist: {broken}"
    assert len(text.splitlines()) <= 150, "the README stays short: the docs hold the rest"
