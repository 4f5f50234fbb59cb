"""``tenure periodic``: list every schedule (declared in code or added at run
time) with its next and last ticks, and add, pause, resume, edit and remove
schedules at run time (:mod:`tenure.maintenance.schedules`)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from tenure.app import App, load_app
from tenure.cli.output import console, counted, note, print_json
from tenure.cli.parsing import HelpFormatter, duration, json_value, open_existing
from tenure.errors import InvalidInput
from tenure.maintenance.periodic import Periodic, PeriodicState, periodic_states
from tenure.maintenance.schedules import UNSET, Schedules, schedule_json
from tenure.registry import Registry
from tenure.store import Store
from tenure.store.schedules import DEFAULT_CATCH_UP


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
) -> None:
    """Add ``tenure periodic`` and its subcommands to ``subcommands``."""
    periodic = subcommands.add_parser(
        "periodic",
        help="list, add, pause, resume, edit and remove periodic schedules",
        description="List every periodic schedule (declared in code with @app.periodic, or "
        "added at run time) with its next and last ticks; or change the ones added at run "
        "time. Without a subcommand: list.",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    periodic.add_argument("--app", help="module:attribute of your App: shows its declared too")
    periodic.add_argument("--json", action="store_true", help="print JSON")
    periodic.set_defaults(run=None, serve=_list)
    actions = periodic.add_subparsers(metavar="ACTION")

    def action(name: str, helptext: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name, help=helptext, description=helptext[0].upper() + helptext[1:] + ".",
            parents=[url_too], formatter_class=HelpFormatter,
        )  # fmt: skip
        parser.add_argument("name", help="the schedule's name")
        # SUPPRESS: given before the action (tenure periodic --app m:app pause x), it stays.
        parser.add_argument(
            "--app", required=name == "add", default=argparse.SUPPRESS,
            help="module:attribute of your App: checks the task (and its store's URL)",
        )  # fmt: skip
        parser.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS,
            help="print the schedule as JSON",
        )  # fmt: skip
        parser.set_defaults(serve=_change, action=name)
        return parser

    added = action("add", "add a schedule at run time (starts from now)")
    added.add_argument("task", help="the registered name of the task to enqueue")
    added.add_argument("schedule", type=_schedule, help="a cron expression, or every: 30s, 5m")
    _spec_options(added)
    edited = action("edit", "change a schedule added at run time")
    edited.add_argument("--task", help="another registered task")
    edited.add_argument("--schedule", type=_schedule, help="a cron expression, or every: 30s")
    _spec_options(edited)
    action("pause", "stop enqueuing a schedule's ticks")
    action("resume", "enqueue a paused schedule's ticks again, from now")
    action("remove", "delete a schedule added at run time")


def _spec_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tz", help="the cron expression's IANA time zone (default UTC)")
    parser.add_argument("--args", type=json_value(list), help="a JSON array")
    parser.add_argument("--kwargs", type=json_value(dict), help="a JSON object")
    parser.add_argument(
        "--catch-up", type=duration,
        help=f"enqueue missed ticks this far back after a gap (default {DEFAULT_CATCH_UP:g}s)",
    )  # fmt: skip


def _schedule(text: str) -> str | float:
    """An interval (``30s``, ``5m``) or, else, a cron expression."""
    try:
        return duration(text)
    except argparse.ArgumentTypeError:
        return text


def _list(args: argparse.Namespace) -> int:
    app = None if args.app is None else load_app(args.app)
    with open_existing(_url(args, app)) as store:
        states = periodic_states(None if app is None else app.periodics, store)
    if args.json:
        print_json([schedule_json(state) for state in states])
        return 0
    table = Table(caption=counted(len(states), "schedule"), box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("name", "schedule", "task", "from", "next tick", "last enqueued"):
        table.add_column(column, no_wrap=True)
    for state in states:
        spec = state.spec
        origin = "code" if state.origin == "code" else "run time"
        if state.declared is False:
            origin = "code (not declared)"
        upcoming = "paused" if state.paused else _when(state.next_tick)
        cells = (spec.name, spec.timetable.describe(), spec.task, origin, upcoming)
        table.add_row(*map(escape, cells), escape(state.last_task_id or "never"))
    console.print(table)
    return 0


def _change(args: argparse.Namespace) -> int:
    with _schedules(args) as schedules:
        changed = _apply(schedules, args)
    if changed is None:
        note(f"removed schedule {args.name}")
    elif args.json:
        print_json(schedule_json(changed))
    else:
        console.print(escape(changed.name), soft_wrap=True)
        note(f"{_DONE[args.action]} {changed.name}: {_summary(changed)}")
    return 0


_DONE = {"add": "added", "edit": "edited", "pause": "paused", "resume": "resumed"}


def _apply(schedules: Schedules, args: argparse.Namespace) -> PeriodicState | None:
    if args.action == "pause":
        return schedules.pause(args.name)
    if args.action == "resume":
        return schedules.resume(args.name)
    if args.action == "remove":
        schedules.remove(args.name)
        return None
    given = {
        "tz": args.tz, "args": args.args, "kwargs": args.kwargs, "catch_up": args.catch_up,
    }  # fmt: skip
    if args.action == "add":
        options: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
        return schedules.add(args.name, args.task, args.schedule, **options)
    given |= {"task": args.task, "schedule": args.schedule}
    return schedules.edit(args.name, **{k: UNSET if v is None else v for k, v in given.items()})


@contextmanager
def _schedules(args: argparse.Namespace) -> Iterator[Schedules]:
    app = None if args.app is None else load_app(args.app)
    with open_existing(_url(args, app)) as store:
        if app is None:
            _refuse_without_app(args, store)
        registry = app.registry if app is not None else Registry()
        periodics: list[Periodic] = app.periodics if app is not None else []
        yield Schedules(lambda: store, registry, periodics)


def _url(args: argparse.Namespace, app: App | None) -> str | None:
    """The store: ``--url``, else the App's, else the default."""
    return args.url or (None if app is None else app.url)


def _refuse_without_app(args: argparse.Namespace, store: Store) -> None:
    """What needs the App to be done right: checking a task and its arguments,
    and knowing whether the code still declares a schedule stored from it."""
    if args.action == "edit" and any(v is not None for v in (args.task, args.args, args.kwargs)):
        raise InvalidInput("--app", "is needed to check the task and its arguments")
    found = store.schedule_get(args.name) if args.action == "remove" else None
    if found is not None and found.origin == "code":
        raise InvalidInput(
            "--app", f"{args.name!r} was declared in code: give --app, to tell whether it still is"
        )


def _summary(state: PeriodicState) -> str:
    upcoming = "paused" if state.paused else f"next tick {_when(state.next_tick)}"
    return f"{state.spec.task} {state.spec.timetable.describe()}, {upcoming}"


def _when(moment: datetime | None) -> str:
    return "none within 400 days" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S}"
