"""How the ``tenure`` command prints: one console, the task table, plain JSON, and
one line per mistake. The JSON shapes are :mod:`tenure.shapes`, the HTTP API's too."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tenure.task import Task

PIPED_WIDTH = 1000

console = Console(width=None if sys.stdout.isatty() else PIPED_WIDTH)
"""Standard output. Piped, lines are as long as their content needs (rich would
cut tables to 80 columns and drop whole columns): a script gets every column,
and ``--json`` when it wants to parse them."""
errors = Console(stderr=True, highlight=False, soft_wrap=True)

STATUS_STYLE = {
    "waiting": "blue",
    "pending": "yellow",
    "running": "cyan",
    "snoozed": "magenta",
    "done": "green",
    "failed": "red",
    "cancelled": "dim",
}


def error(message: str, hint: str | None = None) -> None:
    """One line on stderr for a mistake or a failure (and a hint, when one helps)."""
    line = f"[red]error:[/red] {_escape(message)}"
    if hint:
        line += f" [dim]({_escape(hint)})[/dim]"
    errors.print(line)


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def counted(count: int, thing: str) -> str:
    """``1 task``, ``2 tasks``, ``1,200 events``: a count as people write it."""
    return f"{count:,} {thing}{'' if count == 1 else 's'}"


def note(text: str) -> None:
    """A note for the person at the terminal, on stderr (stdout stays the id)."""
    print(text, file=sys.stderr)


def print_json(value: object) -> None:
    """``value`` as indented JSON on stdout, plain (no colour), for scripts."""
    print(json.dumps(value, indent=2, default=str))


def task_table(
    tasks: Sequence[Task], title: str | None = None, *, caption: str | None = None
) -> Table:
    """A rich table of tasks, one row each, with whole ids (any can be passed
    back to another command)."""
    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("id", no_wrap=True)
    for column in ("topic", "name"):
        table.add_column(column, no_wrap=True, overflow="ellipsis", min_width=8)
    table.add_column("status", no_wrap=True, min_width=9)
    table.add_column("pri", justify="right", no_wrap=True, min_width=3)
    table.add_column("att", no_wrap=True, min_width=3)
    table.add_column("assignee", no_wrap=True, overflow="ellipsis", min_width=8)
    table.add_column("result", no_wrap=True, overflow="ellipsis", min_width=8)
    for task in tasks:
        style = STATUS_STYLE[task.status]
        table.add_row(
            escape(task.id),
            escape(task.topic),
            escape(task.name),
            f"[{style}]{task.status}[/{style}]",
            str(task.priority),
            f"{task.attempts}/{task.max_attempts}",
            escape(task.assignee or ""),
            escape("" if task.result is None else json.dumps(task.result)),
        )
    return table
