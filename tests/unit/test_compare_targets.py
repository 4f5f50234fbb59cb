"""The comparison checks its run against the performance targets: met, missed
but within 10% of the store's own limit for that work (excused), missed, or
not measured."""

from __future__ import annotations

from benchmarks.compare.targets import TARGETS, evaluate, lines
from benchmarks.suite.metrics import Metric


def _metric(key: str, value: float) -> Metric:
    return Metric(key, key, "tasks/s", not key.endswith(".p50"), [value * 0.9, value, value * 1.1])


def _run(**systems: dict[str, float]) -> dict[str, list[Metric]]:
    return {
        name.replace("_", "-"): [_metric(key, value) for key, value in metrics.items()]
        for name, metrics in systems.items()
    }


def _status(rows: list[dict], name: str) -> dict:
    (row,) = [row for row in rows if row["target"] == name]
    return row


POSTGRES_SINGLE = "PostgreSQL, 1 task per call: tenure / pgqueuer"
POSTGRES_BULK = "PostgreSQL, 1 call of many: tenure / pgqueuer"
POSTGRES_LATENCY = "PostgreSQL, 1 task per call: p50 / the store's one-row INSERT"
DRAIN = "drain, 1 worker process: tenure / pgqueuer"


def test_a_target_reached_is_met_and_one_missed_near_the_store_limit_is_excused() -> None:
    rows = evaluate(
        _run(
            tenure_postgres={
                "enqueue.single": 1600.0,
                "enqueue.single.p50": 0.50,
                "limit.task_insert.p50": 0.47,  # 1.06x its own statement: excused
                "limit.insert.p50": 0.20,
                "enqueue.bulk": 50_000.0,
                "limit.task_bulk": 60_000.0,  # 0.83 of its own bulk write: not excused
                "drain.workers_1": 15_000.0,
            },
            pgqueuer={
                "enqueue.single": 2000.0,
                "enqueue.bulk": 55_000.0,
                "drain.workers_1": 5000.0,
            },
        )
    )

    single = _status(rows, POSTGRES_SINGLE)
    assert single["status"] == "excused"
    assert single["measured"] == 0.8
    assert single["needed"] == ">= 1.50"
    assert round(single["excuse"]["measured"], 3) == round(0.50 / 0.47, 3)
    bulk = _status(rows, POSTGRES_BULK)
    assert bulk["status"] == "missed"
    assert round(bulk["excuse"]["measured"], 3) == round(50 / 60, 3)
    assert _status(rows, POSTGRES_LATENCY)["status"] == "excused"  # 2.5x the INSERT, 1.06x its own
    assert _status(rows, DRAIN) == {
        "target": DRAIN,
        "needed": ">= 2.50",
        "measured": 3.0,
        "status": "met",
    }


def test_a_miss_without_a_probe_of_the_store_stays_missed() -> None:
    rows = evaluate(
        _run(
            tenure_postgres={"drain.workers_2": 12_000.0, "enqueue.single.p50": 0.5},
            pgqueuer={"drain.workers_2": 6000.0},
        )
    )
    drain = _status(rows, "drain, 2 worker processes: tenure / pgqueuer")
    assert drain["status"] == "missed"
    assert "excuse" not in drain
    latency = _status(rows, POSTGRES_LATENCY)  # no probe of the store: not measured
    assert latency["status"] == "not measured"
    assert latency["measured"] is None


def test_systems_absent_from_the_run_leave_their_targets_unmeasured() -> None:
    rows = evaluate(_run(tenure_sqlite={"enqueue.single": 3000.0}))
    assert {row["status"] for row in rows} == {"not measured"}
    assert len(rows) == len(TARGETS)


def test_the_report_gives_a_line_per_target_and_a_count() -> None:
    rows = evaluate(
        _run(
            tenure_postgres={
                "enqueue.single": 1600.0,
                "enqueue.single.p50": 0.5,
                "limit.task_insert.p50": 0.3,
                "drain.workers_1": 15_000.0,
            },
            pgqueuer={"enqueue.single": 2000.0, "drain.workers_1": 5000.0},
        )
    )
    printed = lines(rows)
    assert len(printed) == len(TARGETS) + 1
    assert (
        "missed: PostgreSQL, 1 task per call: tenure / pgqueuer 0.80 (>= 1.50); enqueue p50 /"
        " tenure's own statement replayed 1.67 (<= 1.10 excuses)"
    ) in printed
    assert "met: drain, 1 worker process: tenure / pgqueuer 3.00 (>= 2.50)" in printed
    assert printed[-1] == f"targets: 1 met, 1 missed, {len(TARGETS) - 2} not measured"
