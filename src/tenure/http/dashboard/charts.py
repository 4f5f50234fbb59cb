"""The overview's charts, drawn on the server as SVG: no script, no library,
nothing fetched, and readable with the page's own colours in light and dark.

A chart is a list of bars per minute computed here; the template only places
``<rect>`` elements whose sizes are attributes (so the page's
Content-Security-Policy needs no inline style).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tenure.task import Status

if TYPE_CHECKING:
    from tenure.store.types import MinuteRate

WIDTH = 600
HEIGHT = 120
ENDINGS = (Status.DONE, Status.FAILED, Status.CANCELLED)


@dataclass(frozen=True)
class Bar:
    """One rectangle: where, how big, which status colour, and its tooltip."""

    x: float
    y: float
    width: float
    height: float
    kind: str
    title: str


@dataclass(frozen=True)
class Chart:
    """Bars over ``minutes`` minutes, and the value the top of the chart stands for."""

    bars: list[Bar]
    top: str
    total: str
    width: int = WIDTH
    height: int = HEIGHT


def _slot(index: int, count: int) -> tuple[float, float]:
    step = WIDTH / max(count, 1)
    return index * step + 1, max(step - 2, 1)


def throughput(rates: Sequence[MinuteRate]) -> Chart:
    """Tasks ended per minute, stacked by how they ended."""
    top = max((sum(r.entered.get(s, 0) for s in ENDINGS) for r in rates), default=0)
    scale = HEIGHT / top if top else 0
    bars: list[Bar] = []
    for index, rate in enumerate(rates):
        x, width = _slot(index, len(rates))
        base = float(HEIGHT)
        for status in ENDINGS:
            count = rate.entered.get(status, 0)
            if not count:
                continue
            height = count * scale
            base -= height
            title = f"{rate.minute:%H:%M} UTC: {count} {status.value}"
            bars.append(Bar(x, base, width, height, status.value, title))
    ended = sum(sum(r.entered.get(s, 0) for s in ENDINGS) for r in rates)
    return Chart(bars, f"{top}/min", f"{ended} ended")


def failure_rate(rates: Sequence[MinuteRate]) -> Chart:
    """Per minute, the share of endings that were failures (done + failed)."""
    bars: list[Bar] = []
    failed_all = ended_all = 0
    for index, rate in enumerate(rates):
        failed = rate.entered.get(Status.FAILED, 0)
        ended = failed + rate.entered.get(Status.DONE, 0)
        failed_all, ended_all = failed_all + failed, ended_all + ended
        if not failed:
            continue
        x, width = _slot(index, len(rates))
        share = failed / ended
        height = max(share * HEIGHT, 1.0)
        title = f"{rate.minute:%H:%M} UTC: {failed} of {ended} failed ({share:.0%})"
        bars.append(Bar(x, HEIGHT - height, width, height, "failed", title))
    overall = f"{failed_all / ended_all:.1%} failed" if ended_all else "nothing ended"
    return Chart(bars, "100%", overall)
