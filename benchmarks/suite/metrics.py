"""One measured quantity: its samples (one per repetition) and their summary."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Metric:
    """``samples`` holds one value per repetition; the report shows their median,
    min and max. ``params`` says what was measured (sizes, worker count ...)."""

    key: str
    label: str
    unit: str
    higher_is_better: bool
    samples: list[float]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def to_json(self, store: str) -> dict[str, Any]:
        return {
            "store": store,
            "key": self.key,
            "label": self.label,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "median": self.median,
            "min": min(self.samples),
            "max": max(self.samples),
            "samples": self.samples,
            "params": self.params,
        }


def percentiles(values: Sequence[float], wanted: Sequence[int]) -> dict[int, float]:
    """The ``wanted`` percentiles of ``values`` (linear interpolation between
    the closest ranks, as numpy's default does)."""
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {p: cuts[p - 1] for p in wanted}
