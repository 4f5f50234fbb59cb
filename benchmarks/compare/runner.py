"""The shared runner: one workload, measured the same way on every system.

    python -m benchmarks.compare [--quick] [--repeat N] [--systems tenure-sqlite,...]
        [--postgres-url URL] [--redis-url URL] [--output benchmarks/results/compare.json]

Systems are measured one after the other, never at once (the machine has two
cores). For each, with a fresh store per repetition:

- store limits (tenure's store only): one-row INSERT transactions by a client
  that does nothing else, for ``limit_seconds`` (``limits``), then the same
  client replaying tenure's own statement for one task: txn/s and p50 (on
  PostgreSQL, then 4 such clients at once, as the 4 producer processes); then
  tenure's own bulk write of ``enqueue_bulk`` tasks in one transaction, its
  rows made beforehand, as the bulk enqueue meets the store (new, but for one
  task): tasks/s;
- enqueue: ``enqueue_single`` tasks from this process, one call each (tasks/s,
  and each call's latency, p50 and p99); then one bulk call of ``enqueue_bulk``
  tasks (Huey has none: one call each, flagged);
- many producers: ``enqueue_producers`` tasks from 8 threads of this process
  and then from 4 processes, one call per task (``benchmarks.suite.producers``):
  tasks/s and each call's latency, p50 and p99;
- drain: ``drain`` no-op tasks already queued, then 1 worker process (then 2),
  at each system's default concurrency and then at 10 tasks at once, timed
  outside the workers by polling the store, from the first task taken to the
  last one finished (the workers' start-up is not counted, but recorded);
- pickup: one idle worker, ``pickup`` tasks enqueued one at a time
  ``pickup_gap`` apart; each task's wait is its ``time.time()`` at start (the
  ``mark`` task writes it to a file) minus the enqueuer's ``time.time()`` just
  before the enqueue call; p50/p95/p99.

Then each performance target is checked against the run (``targets``): met,
missed within 10% of the store's own limit for that work (excused), missed
and out of reach of that limit too, or missed.

The sizes are the suite's own (``benchmarks.suite.config``: FULL, or QUICK with
``--quick``); each metric is the median of the repetitions, with min and max.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.compare import report, targets
from benchmarks.compare.huey_system import HueySystem
from benchmarks.compare.pgqueuer_system import PgQueuerSystem
from benchmarks.compare.system import MARKS_ENV, Settings, System, read_marks, start_workers
from benchmarks.compare.tenure_system import Tenure
from benchmarks.suite import RESULTS, machine, producers
from benchmarks.suite.config import FULL, QUICK, Plan
from benchmarks.suite.metrics import Metric, percentiles
from benchmarks.suite.processes import wait_until
from benchmarks.suite.report import write_json

SYSTEMS: dict[str, Callable[[Settings], System]] = {
    "tenure-sqlite": lambda settings: Tenure("sqlite", settings),
    "huey-sqlite": lambda settings: HueySystem("sqlite", settings),
    "tenure-postgres": lambda settings: Tenure("postgres", settings),
    "pgqueuer-postgres": PgQueuerSystem,
    "huey-redis": lambda settings: HueySystem("redis", settings),
}
POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/13"
"""Huey's Redis: a database number of its own, flushed before each measurement."""
OUTPUT = RESULTS / "compare.json"
"""Under the checkout's benchmarks/results, whatever the current directory."""
PERCENTILES = (50, 95, 99)
DRAIN_CONCURRENCY = (None, 10)
"""Each worker's concurrency in the drains: its default, then 10 tasks at once."""
LIMIT_LABEL = "store limit: 1-row INSERT per txn"
TASK_LIMIT_LABEL = "store limit: tenure's own 1-task insert per txn"
BULK_LIMIT_LABEL = "store limit: tenure's own bulk insert"
SETTLE = 0.5
"""Seconds an idle worker is left alone after its warm-up task, before the
measured tasks come (it is waiting for a notification or its next poll)."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        raise SystemExit(f"--systems takes some of {', '.join(SYSTEMS)}, not {sorted(unknown)}")
    repeat = args.repeat or (1 if args.quick else 3)
    plan_sizes = QUICK if args.quick else FULL
    progress = Console(stderr=True, log_path=False)
    document: dict[str, Any] = {
        "started_at": _now(),
        "quick": args.quick,
        "repeat": repeat,
        "sizes": asdict(plan_sizes),
        "machine": machine.describe(),
        "systems": {},
    }
    results: dict[str, list[Metric]] = {}
    systems: dict[str, System] = {}
    with tempfile.TemporaryDirectory(prefix="tenure-compare-") as folder:
        settings = Settings(args.postgres_url, args.redis_url, Path(folder))
        for key in args.systems:
            plan = Plan(plan_sizes, repeat, say=_teller(progress, key))
            system = systems[key] = SYSTEMS[key](settings)
            before = _conditions()
            try:
                results[key] = measure(system, plan, Path(folder))
                document["systems"][key] = {
                    "setup": system.setup,
                    "worker_argv": system.worker_argv()[1:],
                    "versus": system.versus,
                    **system.facts(),
                    "before": before,
                    "after": _conditions(),
                }
            finally:
                system.close()
    document["finished_at"] = _now()
    document["results"] = report.results_json(results)
    document["ratios"] = report.ratios_json(results, systems)
    document["limits"] = report.limits_json(results)
    document["targets"] = targets.evaluate(results)
    write_json(args.output, document)
    console = Console()
    if not console.is_terminal:
        console = Console(width=report.WIDTH)  # `make bench-compare > file` keeps every column
    postgres = next((s["postgres"] for s in document["systems"].values() if "postgres" in s), None)
    lines = [machine.summary(document["machine"], postgres), _load_line(document["systems"])]
    console.print(report.table(results, systems, repeat, "\n".join(lines)))
    for line in [*report.limit_lines(results), *targets.lines(document["targets"])]:
        console.print(line, highlight=False)
    console.print(f"JSON written to {Path(args.output).resolve()}")
    return 0


def measure(system: System, plan: Plan, folder: Path) -> list[Metric]:
    return [
        *store_limit(system, plan),
        *enqueue_each(system, plan),
        enqueue_bulk(system, plan),
        *producers.measure_many(lambda: _fresh(system).producer(), plan),
        *(
            drain(system, plan, workers, concurrency)
            for concurrency in DRAIN_CONCURRENCY
            for workers in (1, 2)
        ),
        *pickup(system, plan, folder),
    ]


def store_limit(system: System, plan: Plan) -> list[Metric]:
    """The store's own limits (tenure's stores only): one-row INSERT
    transactions, tenure's own statement for one task, replayed (by one client,
    then on PostgreSQL by as many as the many producers' processes), and
    tenure's bulk write of as many tasks as the bulk enqueue's, its rows made
    beforehand, once per run on a new store (as the bulk enqueue is measured)."""
    seconds, count = plan.sizes.limit_seconds, plan.sizes.enqueue_bulk
    timed = {"seconds": seconds, "client": "pgbench or sqlite3, 1 connection"}
    clients = producers.PROCESSES
    concurrent = {"seconds": seconds, "client": f"pgbench, {clients} connections"}
    bulk = {"tasks": count, "client": "psycopg (COPY) or sqlite3, 1 transaction"}
    return [
        *_limit(plan, "limit.insert", LIMIT_LABEL, lambda: system.store_limit(seconds), timed),
        *_limit(
            plan,
            "limit.task_insert",
            TASK_LIMIT_LABEL,
            lambda: system.store_task_limit(seconds),
            timed,
        ),
        *_limit(
            plan,
            f"limit.task_insert_{clients}",
            f"{TASK_LIMIT_LABEL}, {clients} clients",
            lambda: system.store_task_limit(seconds, clients),
            concurrent,
            clients=clients,
        ),
        *_limit(
            plan,
            "limit.task_bulk",
            f"{BULK_LIMIT_LABEL} of {count:,} per txn",
            lambda: system.store_bulk_limit(count),
            bulk,
            per_transaction=count,
        ),
    ]


def _limit(
    plan: Plan,
    key: str,
    label: str,
    probe: Callable[[], list[float] | None],
    params: dict[str, Any],
    *,
    per_transaction: int = 1,
    clients: int = 1,
) -> list[Metric]:
    """Rows per second (transactions, or tasks where each transaction writes
    ``per_transaction``) and each transaction's p50, of ``probe``: the seconds
    of each transaction it timed (none where it measures nothing), by
    ``clients`` clients each busy from start to end."""
    rates: list[float] = []
    p50s: list[float] = []
    unit = "txn/s" if per_transaction == 1 else "tasks/s"
    for run in range(1, plan.repeat + 1):
        took = probe()
        if took is None:
            return []
        rates.append(len(took) * per_transaction * clients / sum(took))
        p50s.append(statistics.median(took) * 1000)  # a bulk probe times one transaction
        plan.say(f"{label}, run {run}: {rates[-1]:,.0f} {unit}, p50 {p50s[-1]:.3f} ms")
    return [
        Metric(key, label, unit, True, rates, params),
        Metric(f"{key}.p50", f"{label}, p50", "ms", False, p50s, params),
    ]


def _fresh(system: System) -> System:
    system.fresh()
    return system


def enqueue_each(system: System, plan: Plan) -> list[Metric]:
    """Tasks/s of one call per task, and each call's latency (p50, p99)."""
    count = plan.sizes.enqueue_single
    samples = []
    latencies: dict[int, list[float]] = {50: [], 99: []}
    for run in range(1, plan.repeat + 1):
        system.fresh()
        system.enqueue_each(1)  # connects, outside the clock
        started = time.perf_counter()
        took = system.enqueue_each(count)
        samples.append(count / (time.perf_counter() - started))
        for p, value in percentiles(took, tuple(latencies)).items():
            latencies[p].append(value * 1000)
        plan.say(
            f"enqueue {count:,} one call each, run {run}: {samples[-1]:,.0f} tasks/s, "
            f"p50 {latencies[50][-1]:.3f} ms, p99 {latencies[99][-1]:.3f} ms"
        )
    label = f"enqueue, 1 call per task ({count:,})"
    params = {"tasks": count}
    return [
        Metric("enqueue.single", label, "tasks/s", True, samples, params),
        *(
            Metric(f"enqueue.single.p{p}", f"{label}, p{p}", "ms", False, values, params)
            for p, values in latencies.items()
        ),
    ]


def enqueue_bulk(system: System, plan: Plan) -> Metric:
    count = plan.sizes.enqueue_bulk
    samples = []
    for run in range(1, plan.repeat + 1):
        system.fresh()
        system.enqueue_each(1)
        started = time.perf_counter()
        system.enqueue_bulk(count)
        samples.append(count / (time.perf_counter() - started))
        how = "one bulk call" if system.bulk else "one call each: no bulk API"
        plan.say(f"enqueue {count:,} in {how}, run {run}: {samples[-1]:,.0f} tasks/s")
    params = {"tasks": count, "bulk_api": system.bulk}
    return Metric(
        "enqueue.bulk", f"enqueue, 1 bulk call of {count:,}", "tasks/s", True, samples, params
    )


def drain(system: System, plan: Plan, workers: int, concurrency: int | None) -> Metric:
    """``workers`` processes drain a backlog, each at its default concurrency
    (``None``) or running up to ``concurrency`` tasks at once."""
    count = plan.sizes.drain
    samples: list[float] = []
    startups: list[float] = []
    at = "" if concurrency is None else f", concurrency {concurrency}"
    for run in range(1, plan.repeat + 1):
        system.fresh()
        system.fill(count)
        spawned = time.perf_counter()
        with start_workers(system, workers, {}, concurrency) as running:
            began = wait_until(
                lambda: system.progress().queued < count, "a task is taken", workers=running
            )
            ended = wait_until(
                lambda: system.progress().finished >= count,
                f"{count:,} tasks are done",
                workers=running,
            )
        samples.append(count / (ended - began))
        startups.append(began - spawned)
        plan.say(
            f"drain {count:,} with {workers} worker(s){at}, run {run}: {samples[-1]:,.0f} "
            f"tasks/s ({ended - began:.2f} s; first task taken {startups[-1]:.2f} s after spawning)"
        )
    plural = "es" if workers > 1 else ""
    key = f"drain.workers_{workers}" + ("" if concurrency is None else f"_c{concurrency}")
    return Metric(
        key,
        f"drain {count:,}, {workers} worker process{plural}{at}",
        "tasks/s",
        True,
        samples,
        {
            "tasks": count,
            "workers": workers,
            "concurrency": concurrency,
            "startup_seconds": startups,
        },
    )


def pickup(system: System, plan: Plan, folder: Path) -> list[Metric]:
    runs = []
    for run in range(1, plan.repeat + 1):
        waits = _waits(system, plan.sizes.pickup, plan.sizes.pickup_gap, folder)
        runs.append(percentiles(waits, PERCENTILES))
        shown = ", ".join(f"p{p} {runs[-1][p]:.1f} ms" for p in PERCENTILES)
        plan.say(f"pickup of {len(waits)} tasks by an idle worker, run {run}: {shown}")
    params = {"tasks": plan.sizes.pickup, "gap_seconds": plan.sizes.pickup_gap, "workers": 1}
    return [
        Metric(f"pickup.p{p}", f"pickup latency p{p}", "ms", False, [r[p] for r in runs], params)
        for p in PERCENTILES
    ]


def _waits(system: System, count: int, gap: float, folder: Path) -> list[float]:
    """Milliseconds from just before each enqueue call to the task's start."""
    system.fresh()
    marks = folder / f"marks-{uuid.uuid4().hex[:8]}.txt"
    sent: list[float] = []
    with start_workers(system, 1, {MARKS_ENV: str(marks)}) as running:
        system.enqueue_mark(-1)
        wait_until(lambda: -1 in read_marks(marks), "the warm-up task starts", workers=running)
        time.sleep(SETTLE)
        begin = time.perf_counter()
        for index in range(count):
            time.sleep(max(0.0, begin + index * gap - time.perf_counter()))
            sent.append(time.time())
            system.enqueue_mark(index)
        wait_until(lambda: len(read_marks(marks)) > count, f"{count} tasks start", workers=running)
    started = read_marks(marks)
    marks.unlink()
    return [(started[index] - sent[index]) * 1000 for index in range(count)]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 run: a smoke run")
    parser.add_argument("--repeat", type=int, default=None, help="runs per metric (3; quick: 1)")
    parser.add_argument(
        "--systems",
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        default=list(SYSTEMS),
        help=f"comma-separated, some of {', '.join(SYSTEMS)} (default: all)",
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("TENURE_BENCH_POSTGRES_URL") or POSTGRES_URL,
        help="server where throwaway databases are created and dropped",
    )
    parser.add_argument("--redis-url", default=REDIS_URL, help="Huey's Redis (db is flushed)")
    parser.add_argument(
        "--output",
        type=Path,
        default=OUTPUT,
        help="the JSON document (default: benchmarks/results/compare.json of the checkout)",
    )
    return parser


def _teller(progress: Console, key: str) -> Callable[[str], None]:
    def say(line: str) -> None:
        progress.log(f"{key}: {line}")

    return say


def _conditions() -> dict[str, Any]:
    """What else the machine is doing: the load average and the cost of one fsync."""
    return {"load_average": list(os.getloadavg()), "fsync_ms": machine.fsync_ms()}


def _load_line(systems: dict[str, dict[str, Any]]) -> str:
    """The 1-minute load average as each system's measurement began and ended: above
    the core count, something else was running (another benchmark, a test suite)."""
    loads = ", ".join(
        f"{key} {facts['before']['load_average'][0]:.1f}/{facts['after']['load_average'][0]:.1f}"
        for key, facts in systems.items()
    )
    return f"load average at start/end of each: {loads}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
