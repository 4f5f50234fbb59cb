"""The comparison for people (one table, with tenure's ratio to each competitor)
and for programs (the JSON document)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.table import Table

from benchmarks.compare.system import System
from benchmarks.suite import report as bench_report
from benchmarks.suite.metrics import Metric
from benchmarks.suite.report import UNSTEADY

WIDTH = 120


def ratio(tenure: Metric, competitor: Metric) -> float:
    """tenure's median over the competitor's."""
    return tenure.median / competitor.median if competitor.median else float("inf")


def table(
    results: Mapping[str, Sequence[Metric]],
    systems: Mapping[str, System],
    repeat: int,
    context: str,
) -> Table:
    """One section per metric, one row per system; competitors get tenure's ratio."""
    title = f"tenure vs PgQueuer and Huey: median of {repeat} run{'s' if repeat > 1 else ''}"
    grid = Table(
        title=title,
        caption=_caption(context),
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in ("measurement", "unit", "system"):
        grid.add_column(name, no_wrap=True)
    grid.add_column("median", justify="right", no_wrap=True)
    grid.add_column("min-max", justify="right", no_wrap=True, style="dim")
    grid.add_column("tenure ÷ it", justify="right", no_wrap=True)
    by_key = {name: {m.key: m for m in metrics} for name, metrics in results.items()}
    for key, first in bench_report.rows(results).items():
        shown = False
        for name in results:
            metric = by_key[name].get(key)
            if metric is None:
                continue
            median = bench_report.number(metric.median)
            if key == "enqueue.bulk" and not systems[name].bulk:
                median += " *"
            label = "" if shown else first.label
            unit = "" if shown else first.unit
            grid.add_row(
                label,
                unit,
                name,
                median,
                bench_report.spread(metric),
                _versus(by_key, systems[name], key),
            )
            shown = True
        grid.add_section()
    return grid


def results_json(results: Mapping[str, Sequence[Metric]]) -> list[dict[str, Any]]:
    out = []
    for name, metrics in results.items():
        for metric in metrics:
            row = metric.to_json(name)
            out.append({"system": row.pop("store"), **row})
    return out


def ratios_json(
    results: Mapping[str, Sequence[Metric]], systems: Mapping[str, System]
) -> list[dict[str, Any]]:
    """tenure's median over each competitor's, per metric (above 1: more tasks/s, or more ms)."""
    by_key = {name: {m.key: m for m in metrics} for name, metrics in results.items()}
    out = []
    for name, system in systems.items():
        if system.versus is None or system.versus not in by_key:
            continue
        for key, metric in by_key[name].items():
            tenure = by_key[system.versus].get(key)
            if tenure is not None:
                out.append(
                    {
                        "key": key,
                        "tenure": system.versus,
                        "competitor": name,
                        "ratio": ratio(tenure, metric),
                        "tenure_better": _better(tenure, metric),
                    }
                )
    return out


def limits_json(results: Mapping[str, Sequence[Metric]]) -> list[dict[str, Any]]:
    """Per system with a measured store limit: its enqueue p50 over the store's
    one-row INSERT p50, its enqueue rate as a share of the store's rate, and the
    same against tenure's own task insert replayed, where that was measured;
    its bulk enqueue's rate as a share of tenure's own bulk insert's."""
    out = []
    for name, metrics in results.items():
        by_key = {m.key: m for m in metrics}
        p50, rate = by_key.get("enqueue.single.p50"), by_key.get("enqueue.single")
        if p50 is None or rate is None or "limit.insert" not in by_key:
            continue
        row: dict[str, Any] = {"system": name, "enqueue_p50_ms": p50.median}
        for probe, label in (("limit.insert", "insert"), ("limit.task_insert", "task_insert")):
            limit_p50, limit_rate = by_key.get(f"{probe}.p50"), by_key.get(probe)
            if limit_p50 is not None and limit_rate is not None:
                row[f"{label}_p50_ms"] = limit_p50.median
                row[f"p50_over_{label}"] = p50.median / limit_p50.median
                row[f"rate_share_of_{label}"] = rate.median / limit_rate.median
        bulk, bulk_limit = by_key.get("enqueue.bulk"), by_key.get("limit.task_bulk")
        if bulk is not None and bulk_limit is not None:
            row["task_bulk_rate"] = bulk_limit.median
            row["bulk_share_of_task_bulk"] = bulk.median / bulk_limit.median
        out.append(row)
    return out


def limit_lines(results: Mapping[str, Sequence[Metric]]) -> list[str]:
    """:func:`limits_json` for people, a line per system and limit."""
    lines = []
    for row in limits_json(results):
        lines.append(
            f"{row['system']}: enqueue p50 {row['enqueue_p50_ms']:.3f} ms ="
            f" {row['p50_over_insert']:.2f}x the store's own one-row INSERT p50"
            f" ({row['insert_p50_ms']:.3f} ms); {row['rate_share_of_insert']:.0%} of its rate"
        )
        if "task_insert_p50_ms" in row:
            lines.append(
                f"{row['system']}: enqueue p50 = {row['p50_over_task_insert']:.2f}x the store's"
                f" p50 for tenure's own 1-task insert, replayed ({row['task_insert_p50_ms']:.3f}"
                f" ms); {row['rate_share_of_task_insert']:.0%} of its rate"
            )
        if "task_bulk_rate" in row:
            lines.append(
                f"{row['system']}: bulk enqueue = {row['bulk_share_of_task_bulk']:.0%} of the"
                f" store's rate for tenure's own bulk insert, its rows made beforehand"
                f" ({row['task_bulk_rate']:,.0f} tasks/s)"
            )
    return lines


def _versus(by_key: Mapping[str, Mapping[str, Metric]], system: System, key: str) -> str:
    if system.versus is None or system.versus not in by_key:
        return ""
    tenure = by_key[system.versus].get(key)
    competitor = by_key[system.key].get(key)
    if tenure is None or competitor is None:
        return ""
    colour = "green" if _better(tenure, competitor) else "red"
    return f"[{colour}]{ratio(tenure, competitor):.2f}[/{colour}]"


def _better(tenure: Metric, competitor: Metric) -> bool:
    if tenure.higher_is_better:
        return tenure.median > competitor.median
    return tenure.median < competitor.median


def _caption(context: str) -> str:
    return "\n".join(
        [
            context,
            "tenure ÷ it: tenure's median over the competitor's, tenure on the same store"
            " (huey-redis: tenure-postgres); green: tenure better (more tasks/s, fewer ms)",
            "* Huey has no bulk enqueue: one call per task",
            f"! max over {UNSTEADY} x min: the machine was probably busy; rerun",
        ]
    )
