"""The ``tenure`` commands about the store as a whole: workers, unique locks,
stats, paused topics, and migrating the schema. They go through
:class:`~tenure.admin.TaskAdmin`, the service the HTTP API shares."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TypeVar

from rich import box
from rich.markup import escape
from rich.table import Table

from tenure.admin import TaskAdmin
from tenure.cli.output import STATUS_STYLE, console, counted, error, print_json
from tenure.cli.parsing import HelpFormatter, duration, positive, where
from tenure.clock import spoken
from tenure.shapes import (
    JsonObject,
    ageing_json,
    lifted_json,
    limit_json,
    lock_json,
    paused_json,
    rate_json,
    stats_json,
    worker_json,
)
from tenure.store import PausedTopic, TopicAgeing, TopicLimit, TopicRate
from tenure.store.migrate import migrate_store, migration_sql
from tenure.task import Status

Run = Callable[[TaskAdmin, argparse.Namespace], int]
T = TypeVar("T")


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
            formatter_class=HelpFormatter,
        )
        parser.set_defaults(run=run, reads=True)  # each only reads: never creates a store
        parser.add_argument("--json", action="store_true", help="print JSON")
        return parser

    workers = command("workers", "list live workers, or scale one (tenure workers scale)", _workers)
    _add_scale(workers, url_too)
    command("locks", "list held unique locks", _locks)
    command("paused", "list the paused topics", _paused)
    command("limits", "list the topics' concurrency limits", _limits)
    command("rates", "list the topics' rates", _rates)
    command("aged", "list the topics whose tasks' priority rises as they wait", _aged)
    stats = command("stats", "the queue at a glance: counts, waits, throughput, workers", _stats)
    stats.add_argument("--window", type=duration, default=300.0, help="throughput over this")
    for name, helptext, run in (
        ("pause", "stop every worker starting a topic's tasks (running ones finish)", _pause),
        ("resume", "let workers start a paused topic's tasks again", _resume),
    ):
        changes = command(name, helptext, run)
        changes.set_defaults(reads=False)
        changes.add_argument("topic", help="the topic")
    for name, helptext, run, (value, kind, said), off in (
        ("limit", "let at most N tasks of a topic run at once, on every worker", _limit,
         ("max_running", positive, "how many at most"), "lift the topic's limit"),
        ("rate", "let at most N tasks of a topic start within a span", _rate,
         ("max_starts", positive, "how many at most"), "lift the topic's rate"),
        ("ageing", "raise a topic's waiting tasks' priority by one a span", _ageing,
         ("every", duration, "the span a step: 30s, 1m, 1h"), "order the topic by priority alone"),
    ):  # fmt: skip
        bound = command(name, helptext, run)
        bound.set_defaults(reads=False)
        bound.add_argument("topic", help="the topic")
        given = bound.add_mutually_exclusive_group(required=True)
        given.add_argument(value, nargs="?", type=kind, help=said)
        given.add_argument("--off", action="store_true", help=off)
    subcommands.choices["rate"].add_argument(
        "--per", type=duration, default=60.0, help="the span: 1s, 1m, 1h"
    )
    subcommands.choices["ageing"].add_argument(
        "--most", type=positive, default=10, help="steps at most (default 10)"
    )
    _add_migrate(subcommands, url_too)


def _add_scale(workers: argparse.ArgumentParser, url_too: argparse.ArgumentParser) -> None:
    actions = workers.add_subparsers(dest="action", metavar="{scale}")
    helptext = "change how many tasks a running worker runs at once, from its next heartbeat"
    scale = actions.add_parser(
        "scale",
        help=helptext,
        description=helptext[0].upper() + helptext[1:] + ".",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    scale.set_defaults(run=_scale, reads=False)
    scale.add_argument("worker", help="the worker's id, as tenure workers lists it")
    scale.add_argument("concurrency", type=positive, help="tasks it runs at once")
    scale.add_argument("--json", action="store_true", help="print JSON")


def _scale(admin: TaskAdmin, args: argparse.Namespace) -> int:
    scaled = admin.scale(args.worker, args.concurrency)
    if scaled is None:
        error(f"no live worker {args.worker!r}", "tenure workers lists them")
        return 1
    if args.json:
        print_json(worker_json(scaled))
    else:
        console.print(
            f"worker {escape(scaled.id)} runs {args.concurrency} at once from its next heartbeat "
            f"(now {scaled.concurrency})"
        )
    return 0


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
        formatter_class=HelpFormatter,
    )
    migrate.add_argument(
        "--sql", action="store_true", help="print the SQL of the missing migrations, apply none"
    )
    migrate.add_argument(
        "--all", action="store_true", help="with --sql: every migration, without connecting"
    )
    migrate.set_defaults(run=None, serve=_migrate)


def _workers(admin: TaskAdmin, args: argparse.Namespace) -> int:
    workers = admin.workers()
    if args.json:
        print_json([worker_json(info) for info in workers])
        return 0
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("id", "topics", "pool", "held", "started", "last seen"):
        table.add_column(column, no_wrap=True)
    for info in workers:
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


def _locks(admin: TaskAdmin, args: argparse.Namespace) -> int:
    locks = admin.locks()
    if args.json:
        print_json([lock_json(lock) for lock in locks])
        return 0
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("key", "task", "lock", "since", "expires"):
        table.add_column(column, no_wrap=True)
    for lock in locks:
        table.add_row(
            lock.key[:16],
            lock.task_id,
            lock.lock,
            f"{lock.created_at:%Y-%m-%d %H:%M:%S}",
            f"{lock.expires_at:%Y-%m-%d %H:%M:%S}",
        )
    console.print(table)
    return 0


def _pause(admin: TaskAdmin, args: argparse.Namespace) -> int:
    paused = admin.pause(args.topic)
    if args.json:
        print_json(paused_json(paused))
    else:
        console.print(f"paused {escape(paused.topic)} since {paused.paused_at:%Y-%m-%d %H:%M:%S}")
    return 0


def _resume(admin: TaskAdmin, args: argparse.Namespace) -> int:
    resumed = admin.resume(args.topic)
    if args.json:
        print_json({"topic": args.topic, "resumed": resumed})
    else:
        told = "resumed" if resumed else "was not paused:"
        console.print(f"{told} {escape(args.topic)}")
    return 0


def _limit(admin: TaskAdmin, args: argparse.Namespace) -> int:
    def line(limit: TopicLimit) -> str:
        return f"{escape(limit.topic)} runs at most {limit.max_running} at once"

    limit = admin.limit(args.topic, None if args.off else args.max_running)
    return _told(args, limit, limit_json, kind=TopicLimit, lifted="runs without a limit", line=line)


def _rate(admin: TaskAdmin, args: argparse.Namespace) -> int:
    def line(rate: TopicRate) -> str:
        return f"{escape(rate.topic)} starts at most {rate.max_starts} per {rate.per_seconds:g} s"

    rate = admin.rate_limit(args.topic, None if args.off else args.max_starts, args.per)
    return _told(args, rate, rate_json, kind=TopicRate, lifted="starts without a rate", line=line)


def _ageing(admin: TaskAdmin, args: argparse.Namespace) -> int:
    ageing = admin.ageing(args.topic, None if args.off else args.every, args.most)
    lifted = "is taken by priority alone"
    return _told(args, ageing, ageing_json, kind=TopicAgeing, lifted=lifted, line=_aged_line)


def _told(
    args: argparse.Namespace,
    setting: T | None,
    as_json: Callable[[T], JsonObject],
    *,
    kind: type[TopicLimit | TopicRate | TopicAgeing],
    lifted: str,
    line: Callable[[T], str],
) -> int:
    """What a change of a topic's setting left: the setting, as JSON or a
    line; once lifted, its fields null (as the HTTP API answers) or the
    ``lifted`` line."""
    if args.json:
        print_json(as_json(setting) if setting is not None else lifted_json(kind, args.topic))
    else:
        console.print(line(setting) if setting is not None else f"{escape(args.topic)} {lifted}")
    return 0


def _aged_line(ageing: TopicAgeing) -> str:
    return (
        f"{escape(ageing.topic)}  +1 priority every {ageing.every_seconds:g} s waited, "
        f"at most +{ageing.most}"
    )


def _aged(admin: TaskAdmin, args: argparse.Namespace) -> int:
    return _listed(args, admin.ageings(), ageing_json, "no topic ages", _aged_line)


def _listed(
    args: argparse.Namespace,
    items: Sequence[T],
    as_json: Callable[[T], JsonObject],
    none: str,
    line: Callable[[T], str],
) -> int:
    """A listing of the topics' settings: JSON, ``none`` if empty, or a line each."""
    if args.json:
        print_json([as_json(item) for item in items])
    elif not items:
        console.print(none)
    for item in () if args.json else items:
        console.print(line(item))
    return 0


def _rates(admin: TaskAdmin, args: argparse.Namespace) -> int:
    def line(rate: TopicRate) -> str:
        return f"{escape(rate.topic)}  at most {rate.max_starts} per {rate.per_seconds:g} s"

    return _listed(args, admin.rate_limits(), rate_json, "no topic has a rate", line)


def _limits(admin: TaskAdmin, args: argparse.Namespace) -> int:
    def line(limit: TopicLimit) -> str:
        return f"{escape(limit.topic)}  at most {limit.max_running} running"

    return _listed(args, admin.limits(), limit_json, "no topic has a limit", line)


def _paused(admin: TaskAdmin, args: argparse.Namespace) -> int:
    def line(paused: PausedTopic) -> str:
        return f"{escape(paused.topic)}  paused since {paused.paused_at:%Y-%m-%d %H:%M:%S}"

    return _listed(args, admin.paused(), paused_json, "no topic is paused", line)


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


def _stats(admin: TaskAdmin, args: argparse.Namespace) -> int:
    stats = admin.stats(window=args.window)
    alive = len(admin.workers())
    if args.json:
        print_json(stats_json(stats, alive))
        return 0
    table = Table(caption=f"{where(args)} at {stats.at:%H:%M:%S}", box=box.SIMPLE_HEAD)
    table.add_column("topic", no_wrap=True)
    for status in Status:
        table.add_column(status.value, justify="right", style=STATUS_STYLE[status])
    table.add_column("oldest waiting", justify="right")
    table.add_column(f"ended/min ({args.window:g} s)", justify="right")
    paused = {topic.topic for topic in admin.paused()}
    for topic in sorted(stats.counts.keys() | stats.endings.keys()):
        counts = stats.counts.get(topic, {})
        ended = sum(stats.endings.get(topic, {}).values())
        waiting = stats.oldest_pending.get(topic)
        table.add_row(
            escape(topic) + (" (paused)" if topic in paused else ""),
            *(str(counts.get(status, 0)) for status in Status),
            "" if waiting is None else spoken((stats.at - waiting).total_seconds()),
            f"{ended * 60 / args.window:.1f}",
        )
    console.print(table)
    console.print(f"{counted(alive, 'worker')} alive")
    return 0
