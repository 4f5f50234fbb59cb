"""The ``tenure`` command: look at and manage the tasks of a store from a shell.

A thin layer: it parses arguments, calls the store, and prints with rich. Every
command takes ``--url`` (default ``$TENURE_URL``, else ``sqlite:///tenure.db``).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from tenure import __version__
from tenure.app import App
from tenure.errors import TenureError
from tenure.loading import load_app
from tenure.maintenance.scheduler import DEFAULT_RETENTION
from tenure.store import Store, TaskFilter, open_store
from tenure.store.validate import status as parse_status
from tenure.task import Task

console = Console()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    try:
        if args.run is None:  # long-running commands open their App's store themselves
            return int(args.serve(args))
        with open_store(args.url) as store:
            return int(args.run(store, args))
    except TenureError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tenure", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"tenure {__version__}")
    parser.add_argument("--url", help="store URL (default: $TENURE_URL or sqlite:///tenure.db)")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    # --url is accepted after the command too (tenure worker --app m:app --url ...).
    url_too = argparse.ArgumentParser(add_help=False)
    url_too.add_argument("--url", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    scheduling = _scheduling_options()
    _add_worker(commands, [url_too, scheduling])
    scheduler = commands.add_parser(
        "scheduler",
        help="run only the scheduler (stands by unless elected)",
        parents=[url_too, scheduling],
    )
    scheduler.add_argument("--app", required=True, help="module:attribute of the tenure.App")
    scheduler.add_argument("--log-level", default="INFO")
    scheduler.set_defaults(run=None, serve=run_scheduler)

    workers = commands.add_parser("workers", help="list live workers", parents=[url_too])
    workers.set_defaults(run=_workers)

    locks = commands.add_parser("locks", help="list held unique locks", parents=[url_too])
    locks.set_defaults(run=_locks)

    migrate = commands.add_parser(
        "migrate", help="create or update the store's schema", parents=[url_too]
    )
    migrate.set_defaults(run=_migrate)

    tasks = commands.add_parser("tasks", help="list tasks", parents=[url_too])
    tasks.add_argument("--status")
    tasks.add_argument("--topic")
    tasks.add_argument("--group")
    tasks.add_argument("--limit", type=int, default=50)
    tasks.set_defaults(run=_list)

    show = commands.add_parser("show", help="show one task as JSON", parents=[url_too])
    show.add_argument("task_id")
    show.set_defaults(run=_show)

    bench = commands.add_parser("bench", help="measure throughput and latency of each store")
    bench.add_argument("--stores", type=_csv, default=["sqlite", "postgres"], help="a,b")
    bench.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    bench.add_argument("--repeat", type=int, default=3, help="runs of each measurement")
    bench.add_argument("--output", default="benchmarks/results/latest.json", help="JSON path")
    bench.add_argument(
        "--postgres-url",
        help="server for a throwaway database (default: $TENURE_BENCH_POSTGRES_URL, else local)",
    )
    bench.set_defaults(run=None, serve=run_bench)

    for name, helptext in (("cancel", "cancel a task"), ("retry", "retry a failed task")):
        command = commands.add_parser(name, help=helptext, parents=[url_too])
        command.add_argument("task_id")
        command.set_defaults(run=_cancel if name == "cancel" else _retry)
    return parser


def _scheduling_options() -> argparse.ArgumentParser:
    """The scheduler's settings, wherever it runs (alone, or hosted by a worker)."""
    scheduling = argparse.ArgumentParser(add_help=False)
    scheduling.add_argument(
        "--interval", type=float, default=1.0, help="scheduler cycle seconds (default 1)"
    )
    scheduling.add_argument(
        "--leader-lease", type=float, default=10.0, help="scheduler leadership seconds"
    )
    scheduling.add_argument(
        "--retention",
        type=float,
        default=DEFAULT_RETENTION,
        help="seconds finished tasks and events are kept (default 7 days)",
    )
    return scheduling


def _add_worker(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    worker = commands.add_parser("worker", help="run a worker for an App's tasks", parents=parents)
    worker.add_argument("--app", required=True, help="module:attribute of the tenure.App")
    worker.add_argument("--topics", type=_csv, help="comma-separated (default: the App's)")
    worker.add_argument("--concurrency", type=int, default=4)
    worker.add_argument(
        "--prefetch",
        type=int,
        default=None,
        help="tasks reserved beyond running ones (default: follows the work)",
    )
    worker.add_argument("--pool", choices=("threads", "processes", "async"), default="threads")
    worker.add_argument("--tags", type=_csv, default=[], help="comma-separated capabilities")
    worker.add_argument("--lease", type=float, default=30.0, help="lease seconds")
    worker.add_argument("--grace", type=float, default=30.0, help="shutdown grace seconds")
    worker.add_argument("--poll", type=float, default=1.0, help="idle poll seconds")
    worker.add_argument("--no-scheduler", action="store_true", help="never run the scheduler")
    worker.add_argument("--log-level", default="INFO")
    worker.set_defaults(run=None, serve=run_worker)


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _served_app(args: argparse.Namespace) -> App:
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    app = load_app(args.app)
    if args.url:
        app.use(args.url)
    return app


def run_scheduler(args: argparse.Namespace) -> int:
    """``tenure scheduler``: stand by, and run the cycle while elected, until a signal."""
    scheduler = _served_app(args).scheduler(**_scheduling(args))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    scheduler.run(stop)
    return 0


def run_worker(args: argparse.Namespace) -> int:
    """``tenure worker``: load the App, point it at ``--url``, run until stopped."""
    app = _served_app(args)
    worker = app.worker(
        topics=args.topics,
        concurrency=args.concurrency,
        prefetch=args.prefetch,
        pool=args.pool,
        tags=args.tags,
        lease=args.lease,
        grace=args.grace,
        poll_interval=args.poll,
        scheduler=not args.no_scheduler,
        scheduler_options=_scheduling(args),
    )
    exit_code: int = worker.run()
    return exit_code


def _scheduling(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "interval": args.interval,
        "leader_lease": args.leader_lease,
        "retention": args.retention,
    }


def run_bench(args: argparse.Namespace) -> int:
    """``tenure bench``: run the benchmark suite (``tenure.bench``)."""
    from tenure.bench.suite import Options, run  # noqa: PLC0415 - loaded only when asked for

    options = Options(args.stores, args.quick, args.repeat, args.output, args.postgres_url)
    run(options, console)
    return 0


def _workers(store: Store, _: argparse.Namespace) -> int:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("id", "topics", "pool", "held", "started", "last seen"):
        table.add_column(column, no_wrap=True)
    for info in store.worker_list():
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


def _locks(store: Store, _: argparse.Namespace) -> int:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("key", "task", "lock", "since", "expires"):
        table.add_column(column, no_wrap=True)
    for lock in store.unique_lock_list():
        table.add_row(
            lock.key[:16],
            lock.task_id,
            lock.lock,
            f"{lock.created_at:%Y-%m-%d %H:%M:%S}",
            f"{lock.expires_at:%Y-%m-%d %H:%M:%S}",
        )
    console.print(table)
    return 0


def _migrate(store: Store, _: argparse.Namespace) -> int:
    # Opening a store applies its migrations; reaching here means the schema is current.
    console.print(f"schema of {store!r} is up to date")
    return 0


def _list(store: Store, args: argparse.Namespace) -> int:
    status = None if args.status is None else parse_status(args.status)
    filters = TaskFilter(topic=args.topic, status=status, group_id=args.group)
    console.print(task_table(store.task_list(filters, limit=args.limit).tasks, short=False))
    return 0


def _show(store: Store, args: argparse.Namespace) -> int:
    task = store.task_get(args.task_id)
    if task is None:
        Console(stderr=True).print(f"no task with id {args.task_id!r}")
        return 1
    console.print_json(json.dumps(task_json(task)))
    return 0


def _cancel(store: Store, args: argparse.Namespace) -> int:
    console.print(task_table([store.task_cancel(args.task_id)]))
    return 0


def _retry(store: Store, args: argparse.Namespace) -> int:
    console.print(task_table([store.task_retry(args.task_id)]))
    return 0


STATUS_STYLE = {
    "pending": "yellow",
    "running": "cyan",
    "snoozed": "magenta",
    "done": "green",
    "failed": "red",
    "cancelled": "dim",
}


def short_id(task_id: str) -> str:
    """The distinctive tail of an id: generated ids begin with a shared timestamp."""
    return task_id if len(task_id) <= 12 else "…" + task_id[-8:]


def task_table(tasks: Sequence[Task], title: str | None = None, *, short: bool = True) -> Table:
    """A rich table of tasks, one row each."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("id", no_wrap=True, min_width=9 if short else 36)
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
            short_id(task.id) if short else task.id,
            task.topic,
            task.name,
            f"[{style}]{task.status}[/{style}]",
            str(task.priority),
            f"{task.attempts}/{task.max_attempts}",
            task.assignee or "",
            "" if task.result is None else json.dumps(task.result),
        )
    return table


def task_json(task: Task) -> dict[str, object]:
    """A task as plain JSON-able values."""
    fields = {name: getattr(task, name) for name in Task.__dataclass_fields__}
    fields["tags"] = sorted(task.tags)
    fields["error"] = None if task.error is None else task.error.to_json()
    return {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in fields.items()}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
