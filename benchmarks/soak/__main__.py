"""``python -m benchmarks.soak --store postgres``: one soak run (see the package).

    python -m benchmarks.soak --store postgres --rate 1000 --minutes 20
    python -m benchmarks.soak --store sqlite --rate 500 --minutes 20

It makes a fresh store: on PostgreSQL, by default, a private cluster of its
own (``initdb`` with PostgreSQL's defaults, autovacuum on, as a production
server runs: a shared server's settings, or its other work, would be measured
too), or a database of its own on the server of ``--postgres URL``; on
SQLite, a file in a temporary folder. It starts ``--workers`` worker processes with
the retention, and ``--producers`` processes enqueueing ``--rate`` tasks a
second between them; then samples every ``--every`` seconds. It writes
``benchmarks/results/soak-STORE.json`` and ``soak-STORE.svg`` and exits 1 if
the run missed what it checks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from chaos.cluster import PrivateCluster

from benchmarks.soak.chart import svg
from benchmarks.soak.producers import Producers
from benchmarks.soak.sampler import Sampler
from benchmarks.soak.verdict import judge, p
from benchmarks.suite.app import APP_PATH
from benchmarks.suite.machine import describe
from tenure import open_store

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


@contextmanager
def fresh_store(kind: str, server: str) -> Iterator[tuple[str, int | None]]:
    """The URL of a new, empty store of ``kind``, removed afterwards, and the
    process id of the private server holding it, if one was made."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="tenure-soak-") as folder:
            yield f"sqlite:///{Path(folder) / 'soak.db'}", None
        return
    if server == "private":
        with PrivateCluster() as cluster:
            url = cluster.create_database("soak")
            postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
            yield url, postmaster
        return
    name = f"tenure_soak_{int(time.time())}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server.rsplit('/', 1)[0]}/{name}", None
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_workers(url: str, args: argparse.Namespace) -> list[subprocess.Popen[bytes]]:
    command = [sys.executable, "-m", "tenure", "worker", "--app", APP_PATH, "--url", url,
               "--retention", str(args.retention), "--concurrency", str(args.concurrency),
               "--log-level", "warning"]  # fmt: skip
    # This checkout's tenure, not whichever one the interpreter has installed:
    # a run in a second working tree measures that tree's code.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    # The argv is this interpreter and the run's own numbers.
    return [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(args.workers)]  # noqa: S603


def soak(
    url: str, server: int | None, args: argparse.Namespace
) -> tuple[dict[str, Any], dict[str, list[list[float]]]]:
    """Run the load for ``args.minutes`` and sample it; the run and each period's latencies."""
    seconds = args.minutes * 60
    with open_store(url) as store:  # migrated before any worker starts
        workers = start_workers(url, args)
        sampler = Sampler(store, url, args.retention, args.every, server)
        sampler.worker_pids = [w.pid for w in workers]
        producers = Producers(url, args.rate, seconds, args.every, args.producers)
        producers.start()
        began, samples = time.monotonic(), list[dict[str, Any]]()
        latencies: dict[str, list[list[float]]] = {"enqueue": [], "pickup": []}
        try:
            while (elapsed := time.monotonic() - began) < seconds:
                time.sleep(max(0.0, (len(samples) + 1) * args.every - elapsed))
                figures, pickups = sampler.sample()
                enqueues = producers.drain()
                latencies["enqueue"].append(enqueues)
                latencies["pickup"].append(pickups)
                figures.update(t=round(time.monotonic() - began, 1),
                               enqueue_p50=p(enqueues, 0.5), enqueue_p99=p(enqueues, 0.99),
                               pickup_p50=p(pickups, 0.5), pickup_p99=p(pickups, 0.99))  # fmt: skip
                samples.append(figures)
                print(json.dumps(figures), flush=True)
        finally:
            producers.stop()
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(timeout=60)
    return {"samples": samples}, latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", choices=("postgres", "sqlite"), required=True)
    parser.add_argument(
        "--postgres", default="private", help="a server's URL, or private (a cluster of its own)"
    )
    parser.add_argument("--rate", type=float, default=1000.0, help="tasks enqueued a second")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--retention", type=float, default=120.0)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    output = args.output or RESULTS / f"soak-{args.store}.json"
    with fresh_store(args.store, args.postgres) as (url, server):
        run, latencies = soak(url, server, args)
    run.update(
        title=f"tenure soak: {args.store}, {args.rate:g} tasks/s, retention {args.retention:g} s",
        store=args.store, rate=args.rate, minutes=args.minutes, retention=args.retention,
        every=args.every, interval=1.0, workers=args.workers, producers=args.producers,
        cpu_of="the workers" if server is None else "the private server",
        machine=describe(),
    )  # fmt: skip
    run["verdict"] = judge(run, latencies)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(run, indent=1))
    output.with_suffix(".svg").write_text(svg(run))
    print(json.dumps(run["verdict"], indent=1))
    return 0 if run["verdict"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
