"""The package's import graph has no cycle, counting every import: at module level,
inside functions and under ``TYPE_CHECKING``. (The layers between packages are
import-linter's contract in pyproject.toml; this also covers modules within one
package.)"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The modules of the package that ``name`` imports, anywhere in it
    (``from package import module`` counts the module, not the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            found = _known_prefix(target, known)
            if found and found != name:
                yield found


def _known_prefix(target: str, known: dict[str, Path]) -> str:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            found.append(_pop_component(stack, node))

    for node in graph:
        if node not in index:
            visit(node)
    return [component for component in found if len(component) > 1]


def _pop_component(stack: list[str], root: str) -> list[str]:
    component = []
    while True:
        member = stack.pop()
        component.append(member)
        if member == root:
            return sorted(component)


def test_the_import_graph_has_no_cycle() -> None:
    known = modules()
    graph = {name: set(imported(name, path, known)) for name, path in known.items()}
    assert len(graph) > 50 and graph["tenure.app"]  # the graph was read
    assert cycles(graph) == []


def test_a_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
