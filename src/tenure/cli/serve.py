"""``tenure worker`` and ``tenure scheduler``: the long-running commands, which load
the user's App and log instead of printing."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from tenure import logs
from tenure.app import App, load_app
from tenure.errors import ConfigError
from tenure.maintenance.scheduler import DEFAULT_RETENTION, CycleReport
from tenure.store.url import is_private, open_patiently


def running_options() -> argparse.ArgumentParser:
    """The options of every long-running command (worker, scheduler, serve): the
    App, and how to log."""
    running = argparse.ArgumentParser(add_help=False)
    running.add_argument(
        "--app", required=True, help="module:attribute of your tenure.App, e.g. tasks:app"
    )
    running.add_argument(
        "--log-level",
        type=str.lower,
        choices=logs.LEVELS,
        default="info",
        help="least severe log records shown",
    )
    running.add_argument(
        "--log-format",
        type=str.lower,
        choices=logs.FORMATS,
        default="text",
        help="text lines, or one JSON object per line for log pipelines",
    )
    return running


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
) -> list[argparse.ArgumentParser]:
    """Add both commands; returns their parsers (their settings are layered)."""
    running = running_options()
    scheduling = _scheduling_options()
    worker = subcommands.add_parser(
        "worker",
        help="run a worker for an App's tasks",
        description="Reserve and run the App's tasks until SIGTERM or SIGINT.",
        parents=[url_too, running, scheduling],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _worker_options(worker)
    worker.set_defaults(run=None, serve=run_worker)
    scheduler = subcommands.add_parser(
        "scheduler",
        help="run only the scheduler (stands by unless elected)",
        description="Supervise leases, enqueue periodic tasks and prune, while elected.",
        parents=[url_too, running, scheduling],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    scheduler.set_defaults(run=None, serve=run_scheduler)
    return [worker, scheduler]


def _scheduling_options() -> argparse.ArgumentParser:
    """The scheduler's settings, wherever it runs (alone, or hosted by a worker)."""
    scheduling = argparse.ArgumentParser(add_help=False)
    scheduling.add_argument(
        "--interval", type=float, default=1.0, help="seconds between scheduler cycles"
    )
    scheduling.add_argument(
        "--leader-lease", type=float, default=10.0, help="seconds a silent scheduler stays leader"
    )
    scheduling.add_argument(
        "--retention",
        type=float,
        default=DEFAULT_RETENTION,
        help="seconds finished tasks and events are kept",
    )
    return scheduling


def _worker_options(worker: argparse.ArgumentParser) -> None:
    worker.add_argument(
        "--topics",
        type=csv,
        help="comma-separated topics to serve (default: those of the App's tasks)",
    )
    worker.add_argument("--concurrency", type=int, default=4, help="tasks run at once")
    worker.add_argument(
        "--prefetch",
        type=int,
        default=None,
        help="tasks reserved beyond running ones (default: follows the work)",
    )
    worker.add_argument(
        "--pool",
        type=str.lower,
        choices=("threads", "processes", "async"),
        default="threads",
        help="where task bodies run (async def tasks run "
        "on any pool; async is best for many concurrent I/O-bound ones)",
    )
    worker.add_argument(
        "--tags",
        type=csv,
        default=[],
        help="comma-separated capabilities "
        "this worker has; a task runs only where all its tags are",
    )
    worker.add_argument(
        "--lease",
        type=float,
        default=30.0,
        help="seconds a task stays reserved without a keepalive",
    )
    worker.add_argument(
        "--grace", type=float, default=30.0, help="seconds running tasks get to finish at shutdown"
    )
    worker.add_argument(
        "--poll",
        type=float,
        default=1.0,
        help="seconds between looks for work when idle and not woken",
    )
    worker.add_argument(
        "--no-scheduler", action="store_true", help="never host the scheduler in this worker"
    )
    worker.add_argument(
        "--metrics-port", type=int, help="serve this process's Prometheus metrics on this port"
    )
    worker.add_argument(
        "--metrics-host", default="127.0.0.1", help="address of the metrics port (0.0.0.0: all)"
    )


def csv(text: str) -> list[str]:
    """``a, b,c`` as ``["a", "b", "c"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _served_app(args: argparse.Namespace, role: str) -> App:
    logs.configure(args.log_level, args.log_format)
    app = load_app(args.app)
    app.role = role
    if args.url:
        app.use(args.url)
    refuse_private(app.url)
    return app


def refuse_private(url: str) -> None:
    """A command's store must be one other processes can see: a private one
    (``sqlite:///:memory:``, for tests) would take work that vanishes with it."""
    if is_private(url):
        raise ConfigError(
            f"{url} is private to one process and gone when it ends: "
            "give the command a file (sqlite:///tenure.db) or a PostgreSQL URL"
        )


def run_scheduler(args: argparse.Namespace) -> int:
    """``tenure scheduler``: stand by, and run the cycle while elected, until a signal."""
    app = _served_app(args, "scheduler")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # Like a worker, it waits for a store that is not up yet.
    if open_patiently(lambda: app.store, stop, logging.getLogger("tenure.scheduler")) is None:
        return 0
    app.scheduler(**_scheduling(args)).run(stop)
    return 0


def run_worker(args: argparse.Namespace) -> int:
    """``tenure worker``: load the App, point it at ``--url``, run until stopped."""
    app = _served_app(args, "worker")
    scheduling: dict[str, Any] = _scheduling(args)
    if args.metrics_port is not None:
        scheduling["on_cycle"] = _serve_metrics(app, args.metrics_host, args.metrics_port)
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
        scheduler_options=scheduling,
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

    return count


def _scheduling(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "interval": args.interval,
        "leader_lease": args.leader_lease,
        "retention": args.retention,
    }
