"""``tenure events`` and ``tenure report``: the event log and the observer's
reports from a shell.

``tenure events`` shows the newest events (or those after ``--after``) and, with
``--follow``, goes on printing each one as it commits, until interrupted. On a
terminal it prints a table (a line per event while following); with ``--json``
one JSON object per line, to pipe into ``jq`` or a log shipper. The last cursor
printed resumes a later run where this one stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from datetime import datetime

from rich import box
from rich.markup import escape
from rich.table import Table

from tenure.admin import TaskAdmin
from tenure.cli.output import STATUS_STYLE, console, counted, error
from tenure.cli.parsing import HelpFormatter, open_existing
from tenure.errors import TaskNotFound
from tenure.events import Events
from tenure.shapes import event_json, report_json
from tenure.store import Store
from tenure.store.types import EVENT_KINDS, Event
from tenure.store.url import describe_url, resolve_url


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
) -> None:
    """Add ``events`` and ``report`` to ``subcommands``."""
    events = subcommands.add_parser(
        "events",
        help="show and follow the event log",
        description="Show the newest events, or those after --after; with --follow, "
        "print each new one as it commits until interrupted.",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    events.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    events.add_argument("--after", metavar="CURSOR", help="start after this event's cursor")
    events.add_argument("--topic", action="append", help="only this topic (repeatable)")
    events.add_argument(
        "--task",
        action="append",
        help="only this task: its id or a unique beginning of it (repeatable)",
    )
    events.add_argument("--name", action="append", help="only this task name (repeatable)")
    events.add_argument(
        "--kind", action="append", choices=sorted(EVENT_KINDS), help="only this kind (repeatable)"
    )
    events.add_argument("--limit", type=int, default=20, help="most events listed first")
    events.add_argument("--json", action="store_true", help="one JSON object per line")
    events.set_defaults(run=None, serve=_events)

    report = subcommands.add_parser(
        "report",
        help="show the observer's latest reports",
        description="Show the latest report of every observer query, or of KEY.",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    report.add_argument("key", nargs="?", help="one query's key")
    report.add_argument("--json", action="store_true", help="print JSON")
    report.set_defaults(run=None, serve=_report)


def _events(args: argparse.Namespace) -> int:
    if args.limit < 1:
        error(f"--limit must be at least 1, not {args.limit}")
        return 2
    with open_existing(args.url) as store:
        try:
            return _show_events(store, args)
        except BrokenPipeError:  # piped into head, say: the reader has had enough
            sys.stderr.close()
            return 0


def _show_events(store: Store, args: argparse.Namespace) -> int:
    log = Events(lambda: store)
    task_ids = None if args.task is None else [_task_id(store, text) for text in args.task]
    filters = {"topics": args.topic, "task_ids": task_ids, "names": args.name, "kinds": args.kind}
    if args.after is None:
        shown, cursor = log.tail(args.limit, **filters)
    else:
        shown, cursor = log.page(args.after, limit=args.limit, **filters)
    where = describe_url(resolve_url(args.url))
    if not args.follow:
        _print_listing(shown, args.json, f"{counted(len(shown), 'event')} in {where}", cursor)
        return 0
    if not args.json:
        console.print(f"[dim]following {where} (Ctrl-C to stop)[/dim]")
    _print_stream(shown, args.json)
    _print_stream(log.follow(cursor, **filters), args.json)
    return 0


def _task_id(store: Store, text: str) -> str:
    """The whole id of the task ``text`` is, or the one it begins (``AmbiguousId``
    if it begins several); a text no task's id begins with is kept as given: its
    task may be purged, its events still in the log, or not created yet."""
    try:
        return TaskAdmin(store).resolve(text).id
    except TaskNotFound:
        return text


def _print_listing(events: list[Event], as_json: bool, caption: str, cursor: str | None) -> None:
    if as_json:
        _print_stream(events, as_json=True)
        return
    console.print(event_rows(events, caption))
    if cursor is not None:
        console.print(f"[dim]to go on: tenure events --after {cursor} [--follow][/dim]")


def event_rows(events: list[Event], caption: str) -> Table:
    """A table of events, one row each."""
    table = Table(caption=caption, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("cursor", "at", "task", "topic", "name", "transition", "att", "owner"):
        table.add_column(column, no_wrap=True)
    for event in events:
        table.add_row(*_cells(event))
    return table


def _print_stream(events: Iterable[Event], as_json: bool) -> None:
    for event in events:
        if as_json:
            print(json.dumps(event_json(event)), flush=True)
        else:
            console.print("  ".join(_cells(event)), soft_wrap=True)


def _cells(event: Event) -> tuple[str, ...]:
    to = event.kind if event.to_status is None else event.to_status.value
    style = STATUS_STYLE.get(to, "bold")
    start = "new" if event.from_status is None else event.from_status.value
    transition = f"{start} → [{style}]{to}[/{style}]"
    if event.to_status is None:
        transition = f"[{style}]report[/{style}] ({counted(event.attempt, 'task')})"
    return (
        event.cursor,
        _time(event.at),
        escape(event.task_id),
        escape(event.topic),
        escape(event.name),
        transition,
        str(event.attempt),
        escape(event.owner or ""),
    )


def _time(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S.%f}"[:-3]


def _report(args: argparse.Namespace) -> int:
    with open_existing(args.url) as store:
        reports = store.report_list() if args.key is None else [store.report_get(args.key)]
    where = describe_url(resolve_url(args.url))
    if reports == [None]:
        error(
            f"no report named {args.key!r} in {where}", "it has not run yet, or see tenure report"
        )
        return 1
    found = [r for r in reports if r is not None]
    if args.json:
        payload = [report_json(r) for r in found]
        print(json.dumps(payload[0] if args.key else payload, indent=2))
        return 0
    table = Table(caption=f"{len(found)} reports in {where}", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("key", "slot", "ran", "total", "query", "tasks"):
        table.add_column(column, no_wrap=column != "tasks")
    for report in found:
        ids = ", ".join(report.task_ids[:5]) + (" …" if len(report.task_ids) > 5 else "")
        query = " ".join(f"{k}={v}" for k, v in sorted(report.query.items()))
        cells = (
            report.key,
            _time(report.slot),
            _time(report.run_at),
            str(report.total),
            query,
            ids,
        )
        table.add_row(*map(escape, cells))
    console.print(table)
    if args.key is not None:  # one report: every id it kept
        console.print(escape("\n".join(found[0].task_ids)), soft_wrap=True)
    return 0
