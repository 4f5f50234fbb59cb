"""The ``tenure`` commands about tasks: ``enqueue``, ``tasks``, ``show``, ``retry``,
``cancel`` and ``purge``. They go through :class:`~tenure.admin.TaskAdmin`, the
service the HTTP API shares, so both see and do the same.

Any id a command prints is accepted back whole, and so is a unique prefix of
one. ``retry`` and ``cancel`` take ids, or filters for many tasks at once (asking
first, unless ``--yes``); a long batch shows a progress bar on a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.markup import escape
from rich.progress import Progress

from tenure.admin import TaskAdmin
from tenure.app import load_app
from tenure.cli.events import event_rows
from tenure.cli.output import console, counted, error, note, print_json, task_table
from tenure.cli.parsing import HelpFormatter, duration, json_value, moment, open_existing, where
from tenure.errors import InvalidInput, InvalidTransition, TaskNotFound
from tenure.shapes import event_json, task_json
from tenure.store import NewTask, Store, TaskFilter, open_store
from tenure.store.validate import status as parse_status
from tenure.task import Status, Task

PROGRESS_ABOVE = 20
"""More tasks than this get a progress bar, and a count instead of a table."""


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
) -> None:
    """Add the task commands to ``subcommands``."""

    def command(name: str, helptext: str, serve: Callable[..., int]) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = subcommands.add_parser(
            name,
            help=helptext,
            description=helptext[0].upper() + helptext[1:] + ".",
            parents=[url_too],
            formatter_class=HelpFormatter,
        )
        parser.set_defaults(run=None, serve=serve)
        return parser

    _enqueue_options(command("enqueue", "enqueue a task by its registered name", _enqueue))
    tasks = command("tasks", "list tasks, newest first", _tasks)
    _filter_options(tasks)
    tasks.add_argument("--after", metavar="CURSOR", help="the page after this cursor")
    tasks.add_argument("--limit", type=int, default=50, help="most tasks shown")
    tasks.add_argument("--oldest-first", action="store_true", help="oldest first instead")
    tasks.add_argument("--json", action="store_true", help="print JSON")
    show = command("show", "show one task: every field, its error and its history", _show)
    show.add_argument("task_id", help="the task's id, or a unique beginning of it")
    show.add_argument("--json", action="store_true", help="print JSON")
    for name, verb in (("retry", "retry failed or cancelled tasks"), ("cancel", "cancel tasks")):
        changing = command(name, f"{verb}, by id or by filter", _change)
        changing.add_argument("task_ids", nargs="*", metavar="ID", help="ids or unique prefixes")
        _filter_options(changing)
        changing.add_argument("--yes", "-y", action="store_true", help="do not ask first")
        changing.add_argument("--json", action="store_true", help="print the tasks changed as JSON")
        changing.set_defaults(change=name)
    purge = command("purge", "delete finished tasks older than a time", _purge)
    purge.add_argument(
        "--status",
        action="append",
        required=True,
        choices=("done", "failed", "cancelled"),
        help="the tasks' status (repeatable)",
    )
    purge.add_argument("--older-than", type=duration, required=True, help="e.g. 7d, 12h, 90m")
    purge.add_argument("--yes", "-y", action="store_true", help="do not ask first")
    purge.add_argument("--json", action="store_true", help="print how many were deleted as JSON")


def _enqueue_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the task's registered name")
    parser.add_argument("--app", help="module:attribute of your App: checks name and arguments")
    parser.add_argument("--args", type=json_value(list), default=[], help="a JSON array")
    parser.add_argument("--kwargs", type=json_value(dict), default={}, help="a JSON object")
    parser.add_argument("--topic", help="without --app: the topic (default: 'default')")
    parser.add_argument("--delay", type=duration, help="run no sooner than this from now")
    parser.add_argument(
        "--expires", type=duration, help="start within this from now, or never (cancelled)"
    )
    parser.add_argument("--priority", type=int, help="higher runs first")
    parser.add_argument("--group", help="a group id")
    parser.add_argument("--sub-topic", help="a sub-topic")
    parser.add_argument("--description", help="text for people")
    _meta_option(parser, "stored with the task, to find it by (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the task as JSON")


def _filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--status", type=_status, help="one of: " + ", ".join(Status))
    parser.add_argument("--topic", help="only tasks of this topic")
    parser.add_argument("--sub-topic", help="only tasks of this sub-topic")
    parser.add_argument("--name", help="only tasks of this registered name")
    parser.add_argument("--group", help="only tasks of this group id")
    parser.add_argument(
        "--text", help="only tasks whose description contains this (ASCII letters in any case)"
    )
    _meta_option(parser, "only tasks whose meta has it (repeatable: all of them)")
    parser.add_argument("--since", type=moment, help="created since: 2h, 3d or an ISO time")
    parser.add_argument("--before", type=moment, help="created before: 2h, 3d or an ISO time")


def _meta_option(parser: argparse.ArgumentParser, meaning: str) -> None:
    parser.add_argument(
        "--meta", type=_pair, action="append", metavar="NAME=VALUE", help=f"a meta pair: {meaning}"
    )


def _meta_pairs(given: list[tuple[str, str]] | None) -> tuple[tuple[str, str], ...] | None:
    """The ``--meta`` pairs, each name once."""
    if not given:
        return None
    names = [name for name, _ in given]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise InvalidInput("--meta", f"{twice!r} is given twice; a task holds one value per name")
    return tuple(given)


def _pair(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"not NAME=VALUE: {text!r} (e.g. customer=c-42)")
    return name, value


def _status(text: str) -> Status:
    try:
        return parse_status(text.lower())
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _filters(args: argparse.Namespace) -> TaskFilter:
    return TaskFilter(
        topic=args.topic,
        sub_topic=args.sub_topic,
        status=args.status,
        name=args.name,
        group_id=args.group,
        created_from=args.since,
        created_to=args.before,
        text=args.text,
        meta=_meta_pairs(args.meta),
    )


@contextmanager
def _admin(args: argparse.Namespace, *, reads: bool = False) -> Iterator[TaskAdmin]:
    """The store's admin; a command that only ``reads`` never creates the store."""
    with open_existing(args.url) if reads else open_store(args.url) as store:
        yield TaskAdmin(store)


# -- enqueue --------------------------------------------------------------------------


def _enqueue(args: argparse.Namespace) -> int:
    if args.app is not None and args.topic is not None:
        raise InvalidInput("--topic", "comes from the App's declaration with --app")
    with open_store(args.url) as store:
        task = store.task_create(_new_task(args, store))
    if args.json:
        print_json(task_json(task))
    else:
        console.print(escape(task.id), soft_wrap=True)
        note(f"enqueued {task.name} on {task.topic} in {where(args)}")
    return 0


def _new_task(args: argparse.Namespace, store: Store) -> NewTask:
    overrides: dict[str, Any] = {
        "delay": args.delay,
        "priority": args.priority,
        "group_id": args.group,
        "sub_topic": args.sub_topic,
        "description": args.description,
        "meta": None if args.meta is None else dict(_meta_pairs(args.meta) or ()),
        "expires": args.expires,
    }
    if args.app is None:  # an operator's task: name and topic as given
        return NewTask(
            topic=args.topic or "default",
            name=args.name,
            data={"args": args.args, "kwargs": args.kwargs},
            **{k: v for k, v in overrides.items() if v is not None},
        )
    function = load_app(args.app).lookup(args.name)
    chosen = {k: v for k, v in overrides.items() if v is not None}
    return function.prepared(function.options(**chosen).new_task(args.args, args.kwargs))


# -- tasks and show ---------------------------------------------------------------------


def _tasks(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise InvalidInput("--limit", f"must be at least 1, not {args.limit}")
    with _admin(args, reads=True) as admin:
        page = admin.page(
            _filters(args), cursor=args.after, limit=args.limit, newest_first=not args.oldest_first
        )
    if args.json:
        print_json({"tasks": [task_json(t) for t in page.tasks], "cursor": page.cursor})
        return 0
    order = "oldest" if args.oldest_first else "newest"
    caption = f"{counted(len(page.tasks), 'task')} in {where(args)}, {order} first"
    console.print(task_table(page.tasks, caption=caption))
    if page.cursor is not None:
        console.print(f"[dim]more: tenure tasks … --after {page.cursor}[/dim]", soft_wrap=True)
    return 0


SHOWN_APART = frozenset({"error", "errors", "data", "result", "upstream"})
"""What ``tenure show`` prints after the other fields, each in its own way."""


def _show(args: argparse.Namespace) -> int:
    with _admin(args, reads=True) as admin:
        task = _resolve(admin, args.task_id, args)
        history = admin.history(task.id)
    if args.json:
        print_json({**task_json(task), "events": [event_json(e) for e in history]})
        return 0
    for field, value in task_json(task).items():
        if field not in SHOWN_APART and value not in (None, [], ""):
            shown = _pairs(value) if field == "meta" else str(value)
            console.print(f"[bold]{field:>16}[/bold]  {escape(shown)}", soft_wrap=True)
    for field in ("data", "upstream", "result"):
        if field != "upstream" or task.upstream is not None:
            console.print(f"[bold]{field:>16}[/bold]  {escape(json.dumps(getattr(task, field)))}")
    if task.error is not None:
        console.print(f"[red bold]{'error':>16}[/red bold]  {escape(task.error.type)}: "
                      f"{escape(task.error.message)}", soft_wrap=True)  # fmt: skip
        if task.error.traceback:
            console.print(escape(task.error.traceback.rstrip()), soft_wrap=True)
    for earlier in task.errors[:-1]:  # the last one is the error above
        label = f"attempt {earlier.attempt}"
        said = f"{escape(earlier.type)}: {escape(earlier.message)}"
        console.print(f"[red]{label:>16}[/red]  {said}", soft_wrap=True)
    console.print(event_rows(history, caption=counted(len(history), "event")))
    return 0


def _pairs(meta: Any) -> str:
    """A task's meta as it is typed to find it: ``customer=c-42, region=eu``."""
    return ", ".join(f"{name}={value}" for name, value in meta.items())


def _resolve(admin: TaskAdmin, task_id: str, args: argparse.Namespace) -> Task:
    try:
        return admin.resolve(task_id)
    except TaskNotFound:
        raise TaskNotFound(task_id, where(args), prefix=True) from None


# -- retry, cancel, purge -----------------------------------------------------------------


Refusal = tuple[str, str]
"""A task a change was refused for: its id, and why."""


def _change(args: argparse.Namespace) -> int:
    filters = ("status", "topic", "sub_topic", "name", "group", "text", "meta", "since", "before")
    by_filter = any(getattr(args, f) is not None for f in filters)
    if bool(args.task_ids) == by_filter:
        raise InvalidInput(args.change, "give task ids, or filters (--status …): one of the two")
    with _admin(args) as admin:
        act = admin.retry if args.change == "retry" else admin.cancel
        if args.task_ids:
            tasks = [_resolve(admin, task_id, args) for task_id in args.task_ids]
        else:
            tasks = admin.matching(_filters(args)) or []
            if not tasks and not args.json:
                console.print(f"no task matches, in {where(args)}")
                return 0
            if tasks and not _confirm(
                f"{args.change} {counted(len(tasks), 'task')} in {where(args)}?", args.yes
            ):
                return 1
        changed, refused = _apply(act, tasks, quiet=args.json)
    return _tell_changed(args, changed, refused)


def _tell_changed(args: argparse.Namespace, changed: list[Task], refused: list[Refusal]) -> int:
    """What ``retry`` or ``cancel`` did: a table and a count, or with ``--json``
    ``{"retried": [task, ...], "refused": [{"id": ..., "error": ...}, ...]}``
    (``"cancelled"`` for cancel), each task as ``enqueue --json`` prints one."""
    verb = "retried" if args.change == "retry" else "cancelled"
    if args.json:
        print_json(
            {
                verb: [task_json(task) for task in changed],
                "refused": [{"id": task_id, "error": why} for task_id, why in refused],
            }
        )
        return 1 if refused else 0
    if len(changed) <= PROGRESS_ABOVE:
        console.print(task_table(changed))
    console.print(
        f"{verb} {counted(len(changed), 'task')}" + (f", {len(refused)} refused" if refused else "")
    )
    for task_id, why in refused[:10]:
        error(f"{task_id}: {why}")
    return 1 if refused else 0


def _apply(
    act: Callable[[str], Task], tasks: list[Task], *, quiet: bool = False
) -> tuple[list[Task], list[Refusal]]:
    changed: list[Task] = []
    refused: list[Refusal] = []
    hidden = quiet or len(tasks) <= PROGRESS_ABOVE
    with Progress(console=console, transient=True, disable=hidden) as bar:
        step = bar.add_task("working", total=len(tasks))
        for task in tasks:
            try:
                changed.append(act(task.id))
            except (InvalidTransition, TaskNotFound) as exc:
                refused.append((task.id, str(exc)))
            bar.advance(step)
    return changed, refused


def _confirm(question: str, yes: bool) -> bool:
    """Ask before changing tasks by filter; ``--yes`` answers for scripts, and
    without a terminal to ask on, nothing is done without it."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise InvalidInput("--yes", f"{question} add --yes to confirm (no terminal to ask on)")
    answer = console.input(f"{escape(question)} [y/N] ")
    if answer.strip().lower() in {"y", "yes"}:
        return True
    error("nothing changed")
    return False


def _purge(args: argparse.Namespace) -> int:
    statuses = sorted(set(args.status))
    what = f"{', '.join(statuses)} tasks finished more than {args.older_than:g} s ago"
    if not _confirm(f"delete the {what}, in {where(args)}?", args.yes):
        return 1
    deleted = 0
    with _admin(args) as admin, Progress(console=console, transient=True, disable=args.json) as bar:
        step = bar.add_task("deleting", total=None)
        for batch in admin.purge(statuses, args.older_than):
            deleted += batch
            bar.advance(step, batch)
    if args.json:  # the store deletes in batches by age, not by id: a count
        print_json({"deleted": deleted, "status": statuses, "older_than_seconds": args.older_than})
    else:
        console.print(f"deleted {deleted} {what}")
    return 0
