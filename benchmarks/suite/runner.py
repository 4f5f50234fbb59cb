"""Runs every measurement on every store asked for, then reports.

    python -m benchmarks.suite [--stores sqlite,postgres] [--quick] [--repeat 3]
        [--output benchmarks/results/latest.json] [--postgres-url URL]

Stores are measured one after the other, never at once: on a small machine
they would compete for the same cores. Progress goes to stderr as each
repetition ends (a full run takes minutes); the table goes to stdout and the
JSON document to ``output``. A mistake in the options gets one line on stderr
and exit code 2; a measurement that could not be made, one line and exit code 1.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from benchmarks.suite import (
    RESULTS,
    drain,
    enqueue,
    follow,
    limit,
    machine,
    memory,
    pickup,
    producers,
    report,
    reserve,
)
from benchmarks.suite.config import FULL, QUICK, Plan, Sizes
from benchmarks.suite.metrics import Metric
from benchmarks.suite.processes import WORKER_OPTIONS, worker_argv
from benchmarks.suite.target import Target
from tenure import __version__
from tenure.errors import ConfigError, TenureError

STORES = ("sqlite", "postgres")
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_OUTPUT = RESULTS / "latest.json"

Measurement = Callable[[Target, Plan], list[Metric]]
MEASUREMENTS: tuple[Measurement, ...] = (
    enqueue.measure,
    producers.measure,
    drain.measure,
    pickup.measure,
    follow.measure,
    reserve.measure,
    limit.measure,
    memory.measure,
)


@dataclass(frozen=True, slots=True)
class Options:
    stores: Sequence[str] = STORES
    quick: bool = False
    repeat: int = 3
    output: str | Path = DEFAULT_OUTPUT
    postgres_url: str | None = None
    """The server where a throwaway database is created (and dropped); default
    ``$TENURE_BENCH_POSTGRES_URL``, else the local server."""
    only: Sequence[str] = ()
    """The measurements to make, by module name (``drain``, ``enqueue`` …); all
    when empty."""


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    options = Options(
        args.stores, args.quick, args.repeat, args.output, args.postgres_url, args.only
    )
    try:
        run(options)
    except TenureError as exc:
        errors = Console(stderr=True, highlight=False, soft_wrap=True)
        errors.print(f"[red]error:[/red] {escape(str(exc))}")
        return 2 if isinstance(exc, ConfigError) else 1
    except KeyboardInterrupt:
        return 130
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.suite",
        description="Measure throughput and latency of each store; print a table, write JSON.",
    )
    parser.add_argument(
        "--stores",
        type=_csv,
        default=list(STORES),
        help=f"comma-separated, some of {', '.join(STORES)} (default: all)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument(
        "--only",
        type=_csv,
        default=[],
        help=f"comma-separated, some of {', '.join(_name(m) for m in MEASUREMENTS)} (default: all)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (3)")
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="the JSON document (default: benchmarks/results/latest.json)",
    )
    parser.add_argument(
        "--postgres-url",
        help="server for a throwaway database (default: $TENURE_BENCH_POSTGRES_URL, else local)",
    )
    return parser


def _name(measure: Measurement) -> str:
    return measure.__module__.rsplit(".", 1)[-1]


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def run(options: Options, console: Console | None = None) -> dict[str, Any]:
    """Measure, print the table, write the JSON; returns the JSON document."""
    _check(options)
    console = console or Console()
    progress = Console(stderr=True, log_path=False)
    sizes = QUICK if options.quick else FULL
    document = _header(options, sizes)
    results: dict[str, list[Metric]] = {}
    for name in options.stores:
        plan = Plan(sizes, options.repeat, say=_teller(progress, name))
        with _target(name, options.postgres_url or _postgres_url()) as target:
            before = {"load_average": os.getloadavg(), "fsync_ms": machine.fsync_ms()}
            chosen = [m for m in MEASUREMENTS if not options.only or _name(m) in options.only]
            results[name] = [metric for measure in chosen for metric in measure(target, plan)]
            document["stores"][name] = {
                **target.facts(),
                "before": before,
                "after": {"load_average": os.getloadavg(), "fsync_ms": machine.fsync_ms()},
            }
    document["finished_at"] = _now()
    document["results"] = [m.to_json(store) for store, ms in results.items() for m in ms]
    report.write_json(Path(options.output), document)
    console = _wide_enough(console)
    console.print(report.table(results, options.repeat, _caption(document)))
    console.print(f"JSON written to {Path(options.output).resolve()}")
    return document


def _wide_enough(console: Console) -> Console:
    """``console``, or one as wide as the table where output is not a terminal
    (``make bench > file``), which rich would cut to 80 columns."""
    if console.is_terminal or console.width >= report.WIDTH:
        return console
    return Console(file=console.file, width=report.WIDTH)


def _check(options: Options) -> None:
    if options.repeat < 1:
        raise ConfigError("--repeat must be 1 or more")
    unknown = set(options.stores) - set(STORES)
    if unknown or not options.stores:
        raise ConfigError(f"--stores takes some of {', '.join(STORES)}, not {sorted(unknown)}")
    names = [_name(m) for m in MEASUREMENTS]
    if unknown := set(options.only) - set(names):
        raise ConfigError(f"--only takes some of {', '.join(names)}, not {sorted(unknown)}")


def _header(options: Options, sizes: Sizes) -> dict[str, Any]:
    """The document's description of the run; results are added as measured."""
    return {
        "tenure": __version__,
        "started_at": _now(),
        "quick": options.quick,
        "repeat": options.repeat,
        "sizes": asdict(sizes),
        "worker_argv": [*worker_argv("URL")[1:], *WORKER_OPTIONS],
        "machine": machine.describe(),
        "stores": {},
    }


def _target(name: str, postgres_url: str) -> Target:
    if name == "sqlite":
        from benchmarks.suite.sqlite_target import SQLiteTarget  # noqa: PLC0415

        return SQLiteTarget()
    try:
        from benchmarks.suite.postgres_target import PostgresTarget  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigError("PostgreSQL needs the extra: pip install 'tenure[postgres]'") from exc
    return PostgresTarget(postgres_url)


def _teller(progress: Console, store: str) -> Callable[[str], None]:
    """Where a measurement of ``store`` says how a repetition went."""

    def say(line: str) -> None:
        progress.log(f"{store}: {line}")

    return say


def _postgres_url() -> str:
    return os.environ.get("TENURE_BENCH_POSTGRES_URL") or DEFAULT_POSTGRES_URL


def _caption(document: dict[str, Any]) -> str:
    postgres = document["stores"].get("postgres", {}).get("version")
    line = machine.summary(document["machine"], postgres)
    return f"{line}\n! = max over {report.UNSTEADY} x min: the machine was probably busy; rerun"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
