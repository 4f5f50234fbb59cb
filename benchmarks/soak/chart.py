"""The soak's chart: one SVG of small panels over the run's minutes (the
tables' size, what retention has yet to delete, the oldest rows' age, the
latencies' p99, the drain's rate), drawn by hand, so the benchmark needs no
plotting library."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any

Sample = dict[str, Any]

WIDTH, PANEL, MARGIN = 720, 120, 44


def _figure(key: str, scale: float = 1.0) -> Callable[[Sample], float]:
    """A sample's figure ``key``, times ``scale`` (none yet: 0)."""

    def read(sample: Sample) -> float:
        return scale * float(sample[key] or 0)

    return read


def _oldest(sample: Sample) -> float:
    return float(max(sample["oldest_finished"] or 0, sample["oldest_event"] or 0))


def _backlog(sample: Sample) -> float:
    return float(sample["backlog_tasks"] + sample["backlog_events"])


SERIES: tuple[tuple[str, Callable[[Sample], float]], ...] = (
    ("tables (MB)", _figure("bytes", 1e-6)),
    ("backlog (rows)", _backlog),
    ("oldest finished task or event (s)", _oldest),
    ("enqueue p99 (ms)", _figure("enqueue_p99", 1000)),
    ("pickup p99 (ms)", _figure("pickup_p99", 1000)),
    ("drained (tasks/s)", _figure("drained_per_second")),
)


def svg(run: dict[str, Any]) -> str:
    """The chart of ``run``'s samples."""
    samples = run["samples"]
    height = len(SERIES) * (PANEL + MARGIN) + MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{MARGIN}" y="20" font-size="14">{escape(run["title"])}</text>',
    ]
    span = max((s["t"] for s in samples), default=1.0) or 1.0
    for index, (label, value) in enumerate(SERIES):
        top = MARGIN + index * (PANEL + MARGIN)
        parts += _panel(label, [(s["t"], value(s)) for s in samples], top, span)
    parts.append("</svg>")
    return "\n".join(parts)


def _panel(label: str, points: Sequence[tuple[float, float]], top: float, span: float) -> list[str]:
    """One panel: its frame, its label and peak, and its line."""
    peak = max((v for _, v in points), default=0.0) or 1.0
    inner = WIDTH - 2 * MARGIN

    def xy(t: float, v: float) -> str:
        return f"{MARGIN + inner * t / span:.1f},{top + PANEL - PANEL * v / peak:.1f}"

    line = " ".join(xy(t, v) for t, v in points)
    return [
        f'<rect x="{MARGIN}" y="{top}" width="{inner}" height="{PANEL}" '
        'fill="none" stroke="#ccc"/>',
        f'<text x="{MARGIN}" y="{top - 6}">{escape(label)}: peak {peak:,.1f}; '
        f"{span / 60:.0f} minutes</text>",
        f'<polyline points="{line}" fill="none" stroke="#2a6fdb" stroke-width="1.5"/>',
    ]
