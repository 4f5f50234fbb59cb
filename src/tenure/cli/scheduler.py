"""``tenure scheduler``: the scheduler alone, standing by unless elected; its
options are also the worker's, which hosts one."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import Any

from tenure.cli.parsing import HelpFormatter
from tenure.cli.running import RUNNING, default_of, served_app
from tenure.cli.settings import Layers, Option, add_options
from tenure.maintenance.scheduler import Scheduler
from tenure.store.url import open_patiently

SCHEDULING = (
    Option(
        "--interval",
        "seconds between scheduler cycles",
        default=default_of(Scheduler, "interval"),
        type=float,
    ),
    Option(
        "--leader-lease",
        "seconds a silent scheduler stays leader",
        default=default_of(Scheduler, "leader_lease"),
        type=float,
    ),
    Option(
        "--retention",
        "seconds finished tasks and events are kept",
        default=default_of(Scheduler, "retention"),
        type=float,
    ),
    Option(
        "--prune-budget",
        "seconds a cycle may spend deleting what retention no longer keeps, "
        "every cycle while some is left",
        default=default_of(Scheduler, "prune_budget"),
        type=float,
    ),
)
"""The scheduler's settings, wherever it runs (alone, or hosted by a worker)."""


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
    layers: Layers,
) -> None:
    """Add ``scheduler`` to ``subcommands``."""
    scheduler = subcommands.add_parser(
        "scheduler",
        help="run only the scheduler (stands by unless elected)",
        description="Supervise leases, enqueue periodic tasks and prune, while elected.",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    add_options(scheduler, (*RUNNING, *SCHEDULING), layers)
    scheduler.set_defaults(run=None, serve=run_scheduler)


def run_scheduler(args: argparse.Namespace) -> int:
    """``tenure scheduler``: stand by, and run the cycle while elected, until a signal."""
    app = served_app(args, "scheduler")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # Like a worker, it waits for a store that is not up yet.
    if open_patiently(lambda: app.store, stop, logging.getLogger("tenure.scheduler")) is None:
        return 0
    app.scheduler(**scheduling(args)).run(stop)
    return 0


def scheduling(args: argparse.Namespace) -> dict[str, Any]:
    """The scheduler's keyword arguments from its options."""
    return {option.name: getattr(args, option.name) for option in SCHEDULING}
