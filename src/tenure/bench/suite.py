"""Runs every measurement on every store asked for, then reports.

Stores are measured one after the other, never at once: on a small machine
they would compete for the same cores. Progress goes to stderr as each
repetition ends (a full run takes minutes); the table goes to stdout and the
JSON document to ``output``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from tenure import __version__
from tenure.bench import (
    drain,
    enqueue,
    limit,
    machine,
    memory,
    pickup,
    report,
    reserve,
)
from tenure.bench.config import FULL, QUICK, Plan, Sizes
from tenure.bench.metrics import Metric
from tenure.bench.processes import WORKER_OPTIONS, worker_argv
from tenure.bench.target import Target
from tenure.errors import ConfigError

STORES = ("sqlite", "postgres")
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_OUTPUT = Path("benchmarks/results/latest.json")

Measurement = Callable[[Target, Plan], list[Metric]]
MEASUREMENTS: tuple[Measurement, ...] = (
    enqueue.measure,
    drain.measure,
    pickup.measure,
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
            results[name] = [metric for measure in MEASUREMENTS for metric in measure(target, plan)]
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
    console.print(f"JSON written to {options.output}")
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
        from tenure.bench.sqlite_target import SQLiteTarget  # noqa: PLC0415

        return SQLiteTarget()
    try:
        from tenure.bench.postgres_target import PostgresTarget  # noqa: PLC0415
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
