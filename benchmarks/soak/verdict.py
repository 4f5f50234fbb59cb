"""What a soak must show, checked on its samples: the size of the tables
levels off, retention keeps the oldest finished task and event within the
retention and a few scheduler cycles, and latencies at the end are those of
the start."""

from __future__ import annotations

import statistics
from typing import Any

PLATEAU = 0.15
"""The tables' mean size in the last 5 minutes, at most this far from their
mean size in minutes 8 to 12."""
SLACK_CYCLES = 3
"""Scheduler cycles the oldest rows may outlive the retention by."""
SETTLE = 180.0
"""Seconds before the retention is held to (the first rows are not yet old)."""
LATENCY = 0.25
"""The p99s of the last 5 minutes, at most this far above the first 5 minutes'."""


def p(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0 to 1) of ``values``; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def judge(run: dict[str, Any], latencies: dict[str, list[list[float]]]) -> dict[str, Any]:
    """The checks of ``run`` (its samples, one per period), with their figures;
    ``latencies`` holds each period's enqueue and pickup latencies."""
    samples, minutes = run["samples"], run["minutes"]
    at = [s["t"] for s in samples]
    late = [s for s in samples if s["t"] >= (minutes - 5) * 60]
    middle = [s for s in samples if 8 * 60 <= s["t"] <= 12 * 60] or samples[: len(samples) // 2]
    size_late = statistics.fmean(s["bytes"] for s in late) if late else 0.0
    size_middle = statistics.fmean(s["bytes"] for s in middle) if middle else 0.0
    bound = run["retention"] + SLACK_CYCLES * run["interval"] + run["every"]
    settled = [s for s in samples if s["t"] >= SETTLE]
    oldest = max(
        (max(s["oldest_finished"] or 0.0, s["oldest_event"] or 0.0) for s in settled), default=0.0
    )
    checks: dict[str, Any] = {
        "plateau": _within(size_late, size_middle, PLATEAU),
        "size_middle_bytes": round(size_middle),
        "size_last_5_min_bytes": round(size_late),
        "retention_kept": oldest <= bound,
        "oldest_seconds": round(oldest, 1),
        "oldest_bound_seconds": bound,
    }
    for kind, periods in latencies.items():
        first = [v for t, period in zip(at, periods, strict=True) if t <= 300 for v in period]
        last = [v for t, period in zip(at, periods, strict=True) if t >= (minutes - 5) * 60
                for v in period]  # fmt: skip
        early, end = p(first, 0.99), p(last, 0.99)
        checks[f"{kind}_p99_first_5_min"] = early
        checks[f"{kind}_p99_last_5_min"] = end
        checks[f"{kind}_stable"] = (
            early is not None and end is not None and end <= early * (1 + LATENCY)
        )
    checks["passed"] = all(v for k, v in checks.items() if k in _VERDICTS or k.endswith("_stable"))
    return checks


_VERDICTS = {"plateau", "retention_kept"}


def _within(value: float, reference: float, share: float) -> bool:
    return reference > 0 and abs(value - reference) <= share * reference
