"""``tenure worker``: reserve and run an App's tasks, hosting the scheduler
unless told not to, and serve the process's metrics when asked."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

from tenure.app import App
from tenure.cli.parsing import HelpFormatter
from tenure.cli.running import RUNNING, csv, default_of, served_app
from tenure.cli.scheduler import SCHEDULING, scheduling
from tenure.cli.settings import Layers, Option, add_options
from tenure.errors import ConfigError
from tenure.maintenance.scheduler import CycleReport
from tenure.worker import Worker
from tenure.worker.worker import POOLS

WORKING = (
    Option(
        "--topics",
        "comma-separated topics to serve (default: those of the App's tasks)",
        type=csv,
    ),
    Option(
        "--concurrency",
        "tasks run at once",
        default=default_of(Worker, "concurrency"),
        type=int,
    ),
    Option(
        "--prefetch",
        "tasks reserved beyond running ones (default: follows the work)",
        default=default_of(Worker, "prefetch"),
        type=int,
    ),
    Option(
        "--pool",
        "where task bodies run (async def tasks run "
        "on any pool; async is best for many concurrent I/O-bound ones)",
        default=default_of(Worker, "pool"),
        type=str.lower,
        choices=POOLS,
    ),
    Option(
        "--tags",
        "comma-separated capabilities this worker has; a task runs only where all its tags are",
        default=[],
        type=csv,
    ),
    Option(
        "--lease",
        "seconds a task stays reserved without a keepalive",
        default=default_of(Worker, "lease"),
        type=float,
    ),
    Option(
        "--grace",
        "seconds running tasks get to finish at shutdown",
        default=default_of(Worker, "grace"),
        type=float,
    ),
    Option(
        "--unknown-name-grace",
        "seconds a task of a name this worker does not know is given back for "
        "another worker (a rolling deploy) before it fails; 0: fail at once",
        default=default_of(Worker, "unknown_name_grace"),
        type=float,
    ),
    Option(
        "--poll",
        "seconds between looks for work when idle and not woken",
        default=default_of(Worker, "poll_interval"),
        type=float,
    ),
    Option(
        "--heartbeat",
        "seconds between the worker's beats in the registry (tenure workers), each "
        "also taking a new concurrency an operator set (tenure workers scale)",
        default=default_of(Worker, "heartbeat"),
        type=float,
    ),
    Option(
        "--max-tasks-per-child",
        "with --pool processes: replace a child process by a fresh one after this many tasks",
        type=int,
    ),
    Option(
        "--max-memory-per-child",
        "with --pool processes: replace a child process, between two tasks, once its "
        "resident memory reaches this many MB (Linux)",
        type=float,
    ),
    Option("--no-scheduler", "never host the scheduler in this worker", switch=True),
    Option("--metrics-port", "serve this process's Prometheus metrics on this port", type=int),
    Option("--metrics-host", "address of the metrics port (0.0.0.0: all)", default="127.0.0.1"),
)
"""The worker's own options (beside the running and scheduling ones)."""

OPTIONS = (*RUNNING, *SCHEDULING, *WORKING)
"""Every option the environment and ``[tool.tenure]`` may set."""


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
    layers: Layers,
) -> None:
    """Add ``worker`` to ``subcommands``."""
    worker = subcommands.add_parser(
        "worker",
        help="run a worker for an App's tasks",
        description="Reserve and run the App's tasks until SIGTERM or SIGINT.",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    add_options(worker, OPTIONS, layers)
    worker.set_defaults(run=None, serve=run_worker)


def run_worker(args: argparse.Namespace) -> int:
    """``tenure worker``: load the App, point it at ``--url``, run until stopped."""
    app = served_app(args, "worker")
    hosted: dict[str, Any] = scheduling(args)
    if args.metrics_port is not None:
        hosted["on_cycle"] = _serve_metrics(app, args.metrics_host, args.metrics_port)
    worker = app.worker(
        topics=args.topics,
        concurrency=args.concurrency,
        prefetch=args.prefetch,
        pool=args.pool,
        tags=args.tags,
        lease=args.lease,
        grace=args.grace,
        unknown_name_grace=args.unknown_name_grace,
        poll_interval=args.poll,
        heartbeat=args.heartbeat,
        max_tasks_per_child=args.max_tasks_per_child,
        max_memory_per_child=args.max_memory_per_child,
        scheduler=not args.no_scheduler,
        scheduler_options=hosted,
    )
    exit_code: int = worker.run()
    return exit_code


def _serve_metrics(app: App, host: str, port: int) -> Callable[[CycleReport], None]:
    """Count the worker's work and serve it on ``host:port``; what the hosted
    scheduler calls after each cycle it leads."""
    try:
        from prometheus_client import start_http_server  # noqa: PLC0415 - with --metrics-port

        from tenure.metrics import WorkerMetrics  # noqa: PLC0415
    except ImportError:
        raise ConfigError(
            "--metrics-port needs the metrics extra: pip install 'tenure[metrics]'"
        ) from None

    metrics = WorkerMetrics()
    metrics.hook_into(app.hooks)
    try:
        start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise ConfigError(f"--metrics-port {port}: cannot listen on {host}: {exc}") from None
    logging.getLogger("tenure.worker").info("metrics on http://%s:%d/metrics", host, port)

    def count(report: CycleReport) -> None:
        metrics.revoked.inc(len(report.revoked))
        if report.backlog is not None:
            metrics.retention(report.backlog)

    return count
