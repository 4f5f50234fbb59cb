"""``tenure doctor``: the checks of :mod:`tenure.maintenance.doctor` on a store
(and, with ``--app``, on an App's declarations), one line per finding with its
fix. Exit code 0 when every check ran and found nothing, 1 otherwise, 2 for a
mistake in the command.

The store is opened without migrating it, so that a schema out of date is
reported rather than changed; a SQLite store would migrate on opening, so with
migrations pending only the checks that need no store run.
"""

from __future__ import annotations

import argparse

from rich.markup import escape

from tenure.app import load_app
from tenure.cli.output import console, print_json
from tenure.cli.parsing import HelpFormatter
from tenure.cli.scheduler import SCHEDULING
from tenure.cli.settings import Layers, Option, add_options
from tenure.maintenance.doctor import Diagnosis, Subject, diagnose
from tenure.registry import Registry
from tenure.store import Store, open_store, resolve_url
from tenure.store.migrate import pending_migrations
from tenure.store.url import describe_url, parse_url

CLEAN, FOUND = 0, 1

APP = Option("--app", "module:attribute of your tenure.App: also check its task declarations")
"""Optional here: without it, only the store is checked."""
RETENTION = next(option for option in SCHEDULING if option.name == "retention")
"""The scheduler's own option (and its layered value): the retention to hold it to."""


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
    layers: Layers,
) -> None:
    """Add ``doctor`` to ``subcommands``."""
    doctor = subcommands.add_parser(
        "doctor",
        help="find what will hurt later: settings, upkeep, declarations",
        description="Check the store (and, with --app, the App's task declarations) for "
        "what will hurt later, each finding with a one-line fix. Exit code 0 when clean, "
        "1 when something was found or could not be checked.",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    add_options(doctor, (APP, RETENTION), layers)
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.set_defaults(run=None, serve=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    """``tenure doctor``: diagnose, print, and exit 0 only when clean."""
    registry: Registry | None = None
    url = args.url
    if args.app:
        app = load_app(args.app)
        registry, url = app.registry, url or app.url
    url = resolve_url(url)
    store = _open_unchanged(url)
    try:
        diagnosis = diagnose(Subject(url, store, registry, retention=args.retention))
    finally:
        if store is not None:
            store.close()
    if args.json:
        print_json(diagnosis_json(diagnosis, url))
    else:
        _print(diagnosis, url)
    return CLEAN if diagnosis.clean else FOUND


def _open_unchanged(url: str) -> Store | None:
    """The store at ``url``, opened without changing its schema; ``None`` for a
    SQLite store with migrations pending (opening it would apply them)."""
    dialect, _ = parse_url(url)
    if dialect == "postgresql":  # its pool sized as a worker's: the connections check counts it
        return open_store(url, migrate=False, role="doctor")
    if pending_migrations(url):
        return None
    return open_store(url)


def diagnosis_json(diagnosis: Diagnosis, url: str) -> dict[str, object]:
    """The stable JSON shape of ``tenure doctor --json``."""
    return {
        "store": describe_url(url),
        "clean": diagnosis.clean,
        "checks": diagnosis.checks,
        "findings": [{"code": f.code, "what": f.what, "fix": f.fix} for f in diagnosis.findings],
        "unchecked": [{"check": u.check, "error": u.why} for u in diagnosis.unchecked],
        "skipped": [{"check": s.check, "reason": s.why} for s in diagnosis.skipped],
    }


def _print(diagnosis: Diagnosis, url: str) -> None:
    for finding in diagnosis.findings:
        console.print(
            f"[red]{finding.code}[/red]: {escape(finding.what)} [dim]→[/dim] "
            f"[bold]fix:[/bold] {escape(finding.fix)}",
            highlight=False,
            soft_wrap=True,
        )
    for unchecked in diagnosis.unchecked:
        console.print(
            f"[yellow]unchecked {unchecked.check}[/yellow]: {escape(unchecked.why)}",
            highlight=False,
            soft_wrap=True,
        )
    if diagnosis.clean:
        console.print(
            f"nothing found: {len(diagnosis.checks)} checks on {describe_url(url)}",
            highlight=False,
            soft_wrap=True,
        )
