"""The results, for people (one rich table) and for programs (one JSON document)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from benchmarks.suite.metrics import Metric

WIDTH = 120
"""Columns the table needs for two stores without cutting a cell."""

UNSTEADY = 1.5
"""Runs whose max is this many times their min are flagged: the machine was
probably busy with something else, and that measurement is worth running again."""


def table(results: Mapping[str, Sequence[Metric]], repeat: int, caption: str) -> Table:
    """One row per measurement, one median and one min-max column per store."""
    title = f"tenure benchmarks: median of {repeat} run{'s' if repeat > 1 else ''} (min-max)"
    grid = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False)
    grid.add_column("measurement", no_wrap=True)
    grid.add_column("unit", no_wrap=True)
    for store in results:
        grid.add_column(store, justify="right", no_wrap=True)
        grid.add_column("min-max", justify="right", no_wrap=True, style="dim")
    by_key = {store: {m.key: m for m in metrics} for store, metrics in results.items()}
    for key, first in rows(results).items():
        cells = [first.label, first.unit]
        for store in results:
            metric = by_key[store].get(key)
            cells += ["-", ""] if metric is None else [number(metric.median), spread(metric)]
        grid.add_row(*cells)
    return grid


def rows(results: Mapping[str, Sequence[Metric]]) -> dict[str, Metric]:
    """Every measurement key, in the order first measured."""
    rows: dict[str, Metric] = {}
    for metrics in results.values():
        for metric in metrics:
            rows.setdefault(metric.key, metric)
    return rows


def spread(metric: Metric) -> str:
    """min-max, flagged when the runs disagree much (the machine was busy)."""
    low, high = min(metric.samples), max(metric.samples)
    text = f"{number(low)}-{number(high)}"
    if low > 0 and high / low > UNSTEADY:
        return f"[yellow]{text} ![/yellow]"
    return text


def number(value: float) -> str:
    """Three significant figures or so, thousands separated."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
