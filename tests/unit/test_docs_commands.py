"""Every ``tenure`` command the documentation shows is one the command line
takes: each shell block's ``tenure …`` lines (continuations joined, comments
dropped) are parsed by the real parser, so a renamed option or a removed
command cannot survive in the docs. (Parsing runs nothing: no store, no App.)"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

from tenure.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("docs/**/*.md"), ROOT / "README.md"])
SHELL = {">", ">>", "<", "|", "||", "&&", "&", ";", "2>"}
"""What ends a command on a line (a redirection, a pipe): the shell's, not tenure's."""
BLOCK = re.compile(r"```(?:sh|bash|console|shell)\n(.*?)```", re.DOTALL)


def commands(page: Path) -> list[str]:
    """The ``tenure`` command lines of ``page``'s shell blocks."""
    found = []
    for block in BLOCK.findall(page.read_text()):
        for raw in block.replace("\\\n", " ").splitlines():
            line = raw.strip().removeprefix("$ ")
            if line.startswith("tenure ") or line == "tenure":
                found.append(line.split(" #", 1)[0].strip())
    return found


SHOWN = [(page.relative_to(ROOT).as_posix(), line) for page in PAGES for line in commands(page)]


def test_the_docs_show_commands_at_all() -> None:
    assert len(SHOWN) > 40  # the reference and the how-tos; a broken reader finds none


@pytest.mark.parametrize(("page", "line"), SHOWN, ids=[f"{page}: {line}" for page, line in SHOWN])
def test_each_command_the_docs_show_is_one_the_parser_takes(page: str, line: str) -> None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(itertools.takewhile(lambda word: word not in SHELL, lexer))[1:]
    words = [re.sub(r"\$\([^)]*\)|\$\{?\w+\}?", "value", word) for word in words]
    try:
        build_parser(layered=False).parse_args(words)
    except SystemExit as refused:
        if refused.code not in (0, None):  # --help and --version exit 0
            pytest.fail(f"{page}: {line!r} is refused by the parser")
