"""What a change to tenure's PostgreSQL schema costs the server, measured A/B.

A trigger, an index or a column changes every enqueue and every drained task by
tens of microseconds, less than this kind of machine drifts between two runs of
the same code. So the variants are measured side by side, in one sitting:
each round makes a store per variant (a throwaway database: tenure's
migrations, then the variant's SQL file) and measures every variant in turn,
so that a drift of the machine touches all of them alike. Two measurements
per variant and round, the store emptied between them:

- **enqueue**: pgbench (one client, statements prepared) replays the very
  statement the store sends to create one no-op task, its triggers included;
  the median transaction time and the rate.
- **drain**: a backlog of no-op tasks, reserved 100 at a time and completed in
  one call each, as a worker's fetcher and completer do, with no task run; the
  processor time of every PostgreSQL process (from ``/proc``) and the client's
  thread per task.

The report gives each variant's medians over the rounds and its ratio to the
first variant (the baseline), paired round by round::

    python -m benchmarks.schema_cost --variant base= --variant lean=lean.sql

It needs pgbench and a PostgreSQL server on this machine (``/proc`` of its
processes), and creates and drops throwaway databases there, as ``make bench``
does (:class:`~benchmarks.suite.postgres_target.PostgresTarget`).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from benchmarks.compare.limits import postgres_task_insert
from benchmarks.suite import BenchError
from benchmarks.suite.app import NAME, TOPIC
from benchmarks.suite.postgres_target import PostgresTarget
from tenure.errors import TenureError
from tenure.store import Completion, Lease, NewTask, ReserveParams, open_store

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
OWNER = "schema-cost"
RESERVE = 100
"""Tasks per reservation (and per completion call) in the drain."""
CHUNK = 1_000
"""Tasks per bulk enqueue while filling the backlog."""
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Variant:
    """A name, and the SQL run on a fresh, migrated store (none: tenure as is)."""

    name: str
    sql: str


@dataclass
class Rounds:
    """A variant's figures, one per round."""

    enqueue_ms: list[float] = field(default_factory=list)
    enqueue_rate: list[float] = field(default_factory=list)
    server_us: list[float] = field(default_factory=list)
    client_us: list[float] = field(default_factory=list)


def variant(spec: str) -> Variant:
    """``name=path.sql`` (or ``name=``, for the schema as it is)."""
    name, sep, path = spec.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"a variant is name=file.sql or name=, not {spec!r}")
    if not path:
        return Variant(name, "")
    try:
        return Variant(name, Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from None


@contextmanager
def variant_store(admin_url: str, sql: str) -> Iterator[PostgresTarget]:
    """A throwaway database on the server holding tenure's schema changed by
    ``sql`` (emptying it between measurements keeps the change), dropped after.
    The variant's SQL finds tenure's objects by their names alone: it runs with
    tenure's schema first in its search path."""
    target = PostgresTarget(admin_url)
    try:
        url = target.fresh()  # migrates
        if sql:
            path = "-c search_path=tenure,public"
            with psycopg.connect(url, autocommit=True, options=path) as conn:
                try:
                    conn.execute(sql.encode())
                except psycopg.Error as exc:
                    first = str(exc).strip().splitlines()[0]
                    raise BenchError(f"the variant's SQL failed: {first}") from None
        yield target
    finally:
        target.close()


def server_ticks() -> int:
    """Clock ticks of processor time used so far by every PostgreSQL process."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rpartition(")")[2].split()
            command = Path(entry.path, "comm").read_text().strip()
        except OSError:  # gone meanwhile
            continue
        if command.startswith("postgres"):
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def drain_cost(url: str, tasks: int) -> tuple[float, float]:
    """(server, client) processor microseconds per task, reserving and
    completing a backlog of ``tasks`` no-op tasks."""
    store = open_store(url)
    try:
        for first in range(0, tasks, CHUNK):
            count = min(CHUNK, tasks - first)
            store.task_create_many([NewTask(topic=TOPIC, name=NAME) for _ in range(count)])
        params = ReserveParams(owner=OWNER, topics=[TOPIC], limit=RESERVE)
        done, ticks, began = 0, server_ticks(), time.thread_time()
        while held := store.task_reserve(params):
            leases = [Lease(task.id, OWNER, task.lease_token or 0) for task in held]
            store.task_complete_many([Completion(lease) for lease in leases])
            done += len(held)
        client = time.thread_time() - began
        server = (server_ticks() - ticks) / TICKS
    finally:
        store.close()
    if done != tasks:
        raise BenchError(f"drained {done} tasks of {tasks}")
    return server / tasks * 1e6, client / tasks * 1e6


def measure_round(
    admin_url: str,
    variants: Sequence[Variant],
    results: dict[str, Rounds],
    seconds: int,
    tasks: int,
) -> None:
    """One round: every variant on a store of its own, in turn."""
    for each in variants:
        figures = results[each.name]
        with variant_store(admin_url, each.sql) as target:
            latencies = postgres_task_insert(target.url, seconds, TOPIC, NAME)
            figures.enqueue_ms.append(statistics.median(latencies) * 1e3)
            figures.enqueue_rate.append(len(latencies) / seconds)
            server, client = drain_cost(target.fresh(), tasks)
            figures.server_us.append(server)
            figures.client_us.append(client)
        print(
            f"  {each.name}: enqueue p50 {figures.enqueue_ms[-1]:.3f} ms, drain "
            f"{figures.server_us[-1]:.0f} µs server + {figures.client_us[-1]:.0f} µs client a task",
            flush=True,
        )


def paired(these: list[float], base: list[float]) -> float:
    """The median of the round-by-round ratios (NaN if the baseline measured
    nothing: a drain too short for the processor's clock ticks)."""
    ratios = [a / b for a, b in zip(these, base, strict=True) if b]
    return statistics.median(ratios) if ratios else math.nan


def report(variants: Sequence[Variant], results: dict[str, Rounds]) -> str:
    """A table: each variant's medians and its paired ratios to the first."""
    base = results[variants[0].name]
    lines = [
        "| variant | enqueue p50 (ms) | enqueue (txn/s) | drain server (µs/task) "
        "| drain client (µs/task) | ratio: enqueue p50 | ratio: drain server |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for each in variants:
        r = results[each.name]
        lines.append(
            f"| {each.name} | {statistics.median(r.enqueue_ms):.3f} "
            f"| {statistics.median(r.enqueue_rate):,.0f} | {statistics.median(r.server_us):.0f} "
            f"| {statistics.median(r.client_us):.0f} "
            f"| {paired(r.enqueue_ms, base.enqueue_ms):.2f} "
            f"| {paired(r.server_us, base.server_us):.2f} |"
        )
    return "\n".join(lines)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.schema_cost", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--variant", type=variant, action="append", required=True,
        help="name=file.sql (SQL run on each fresh store), or name= for the schema as it is; "
        "the first is the baseline",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--seconds", type=int, default=5, help="enqueue replay per variant")
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks drained per variant")
    parser.add_argument("--url", default=os.environ.get("TENURE_BENCH_POSTGRES_URL", DEFAULT_URL))
    args = parser.parse_args(argv)
    names = [each.name for each in args.variant]
    if len(set(names)) != len(names):
        parser.error("each variant needs a name of its own")
    if args.rounds < 1 or args.seconds < 1 or args.tasks < RESERVE:
        parser.error(f"--rounds and --seconds must be at least 1, --tasks at least {RESERVE}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    results = {each.name: Rounds() for each in args.variant}
    try:
        for number in range(1, args.rounds + 1):
            print(f"round {number} of {args.rounds}", flush=True)
            measure_round(args.url, args.variant, results, args.seconds, args.tasks)
    except (BenchError, TenureError, psycopg.Error) as exc:
        print(f"schema_cost: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    print(report(args.variant, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
