"""The ``tenure`` commands that read or change the store: list, show, cancel and
retry tasks; list workers and unique locks; migrate the schema. They go through
:class:`~tenure.admin.TaskAdmin`, the service the HTTP API will share."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from rich import box
from rich.table import Table

from tenure.admin import TaskAdmin
from tenure.cli.output import console, error, task_json, task_table
from tenure.errors import TaskNotFound
from tenure.store.migrate import migrate_store, migration_sql
from tenure.store.url import describe_url, resolve_url

Run = Callable[[TaskAdmin, argparse.Namespace], int]


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
) -> None:
    """Add the store commands to ``subcommands``."""

    def command(name: str, helptext: str, run: Run) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = subcommands.add_parser(
            name,
            help=helptext,
            description=helptext[0].upper() + helptext[1:] + ".",
            parents=[url_too],
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        parser.set_defaults(run=run)
        return parser

    command("workers", "list live workers", _workers)
    command("locks", "list held unique locks", _locks)
    _add_migrate(subcommands, url_too)
    tasks = command("tasks", "list tasks", _list)
    tasks.add_argument("--status", help="pending, running, snoozed, done, failed or cancelled")
    tasks.add_argument("--topic", help="only tasks of this topic")
    tasks.add_argument("--group", help="only tasks of this group id")
    tasks.add_argument("--limit", type=int, default=50, help="most tasks shown")
    command("show", "show one task as JSON", _show).add_argument("task_id", help="the task's id")
    command("cancel", "cancel a task", _cancel).add_argument("task_id", help="the task's id")
    command("retry", "retry a failed or cancelled task", _retry).add_argument(
        "task_id", help="the task's id"
    )


def _add_migrate(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
) -> None:
    migrate = subcommands.add_parser(
        "migrate",
        help="create or update the store's schema",
        description="Apply the migrations the store lacks and say which; with --sql, "
        "print them instead, for a DBA to run (psql -v ON_ERROR_STOP=1 -f file).",
        parents=[url_too],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    migrate.add_argument(
        "--sql", action="store_true", help="print the SQL of the missing migrations, apply none"
    )
    migrate.add_argument(
        "--all", action="store_true", help="with --sql: every migration, without connecting"
    )
    migrate.set_defaults(run=None, serve=_migrate)


def where(args: argparse.Namespace) -> str:
    """The store a command used, as the user should read it (absolute SQLite path,
    no password): a relative SQLite URL names a different file in each folder."""
    return describe_url(resolve_url(args.url))


def _workers(admin: TaskAdmin, _: argparse.Namespace) -> int:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("id", "topics", "pool", "held", "started", "last seen"):
        table.add_column(column, no_wrap=True)
    for info in admin.workers():
        table.add_row(
            info.id,
            ",".join(info.topics),
            f"{info.pool}x{info.concurrency}",
            str(info.held),
            f"{info.started_at:%Y-%m-%d %H:%M:%S}" if info.started_at else "",
            f"{info.last_seen:%H:%M:%S}" if info.last_seen else "",
        )
    console.print(table)
    return 0


def _locks(admin: TaskAdmin, _: argparse.Namespace) -> int:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("key", "task", "lock", "since", "expires"):
        table.add_column(column, no_wrap=True)
    for lock in admin.locks():
        table.add_row(
            lock.key[:16],
            lock.task_id,
            lock.lock,
            f"{lock.created_at:%Y-%m-%d %H:%M:%S}",
            f"{lock.expires_at:%Y-%m-%d %H:%M:%S}",
        )
    console.print(table)
    return 0


def _migrate(args: argparse.Namespace) -> int:
    """``tenure migrate``: apply, and name, what the store lacks; or print its SQL."""
    if args.sql:
        script = migration_sql(args.url, pending=not args.all)
        if script:
            print(script, end="" if script.endswith("\n") else "\n")
        else:
            print(f"-- {where(args)} is up to date: nothing to run")
        return 0
    applied = migrate_store(args.url)
    if applied:
        print(f"applied {', '.join(applied)} to {where(args)}")
    else:
        print(f"{where(args)} is up to date")
    return 0


def _list(admin: TaskAdmin, args: argparse.Namespace) -> int:
    tasks = admin.list(status=args.status, topic=args.topic, group_id=args.group, limit=args.limit)
    console.print(task_table(tasks, short=False, caption=f"{len(tasks)} tasks in {where(args)}"))
    return 0


def _show(admin: TaskAdmin, args: argparse.Namespace) -> int:
    try:
        task = admin.get(args.task_id)
    except TaskNotFound:
        error(f"no task with id {args.task_id!r} in {where(args)}")
        return 1
    console.print_json(json.dumps(task_json(task)))
    return 0


def _cancel(admin: TaskAdmin, args: argparse.Namespace) -> int:
    console.print(task_table([admin.cancel(args.task_id)]))
    return 0


def _retry(admin: TaskAdmin, args: argparse.Namespace) -> int:
    console.print(task_table([admin.retry(args.task_id)]))
    return 0
