"""The comparison checks its run against the performance targets: met, missed
but within 10% of the store's own limit for that work (excused), missed where
that limit misses too (out of reach), missed, or not measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.compare.report import results_json
from benchmarks.compare.targets import TARGETS, Ratio, evaluate, lines, main
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


POSTGRES_SINGLE = "PostgreSQL, 1 task per call: tenure / pgqueuer-postgres"
POSTGRES_BULK = "PostgreSQL, 1 call of many: tenure / pgqueuer-postgres"
POSTGRES_LATENCY = "PostgreSQL, 1 task per call: p50 / the store's one-row INSERT"
DRAIN = "drain, 1 worker process: tenure / pgqueuer-postgres"


def test_met_excused_missed_and_out_of_reach_in_one_run() -> None:
    rows = evaluate(
        _run(
            tenure_postgres={
                "enqueue.single": 1600.0,
                "limit.task_insert": 1700.0,  # 0.94 of its own statement's rate: excused
                "enqueue.single.p50": 0.50,
                "limit.task_insert.p50": 0.47,
                "limit.insert.p50": 0.20,
                "enqueue.bulk": 50_000.0,
                "limit.task_bulk": 60_000.0,  # 0.83 of its own bulk write: not excused
                "drain.workers_1": 15_000.0,
            },
            pgqueuer_postgres={
                "enqueue.single": 2000.0,
                "enqueue.bulk": 55_000.0,
                "drain.workers_1": 5000.0,
            },
        )
    )

    single = _status(rows, POSTGRES_SINGLE)
    # excused, though the statement's own rate is short of the goal too (0.85)
    assert single["status"] == "excused"
    assert single["measured"] == 0.8
    assert single["needed"] == ">= 1.50"
    assert round(single["excuse"]["measured"], 3) == round(1600 / 1700, 3)
    assert single["excuse"]["needed"] == ">= 0.91"
    bulk = _status(rows, POSTGRES_BULK)
    assert bulk["status"] == "missed"  # the bulk write's own rate reaches 1.09x
    assert round(bulk["excuse"]["measured"], 3) == round(50 / 60, 3)
    assert round(bulk["ceiling"]["measured"], 3) == round(60 / 55, 3)
    # 2.5x the INSERT, the store's limit itself: its own statement excuses nothing,
    # and at 2.35x the INSERT shows the bound beyond tenure's write
    latency = _status(rows, POSTGRES_LATENCY)
    assert latency["status"] == "out of reach"
    assert latency["measured"] == 2.5
    assert "excuse" not in latency
    assert latency["ceiling"]["measured"] == 0.47 / 0.20
    assert latency["ceiling"]["needed"] == "<= 1.32"  # 1.2, with 10% for the probe's noise
    assert _status(rows, DRAIN) == {
        "target": DRAIN,
        "needed": ">= 2.50",
        "measured": 3.0,
        "status": "met",
    }


def test_a_goal_the_store_allows_no_write_of_tenure_s_to_reach_is_out_of_reach() -> None:
    rows = evaluate(
        _run(
            tenure_postgres={
                "enqueue.single": 1500.0,
                "limit.task_insert": 2000.0,
                "enqueue.bulk": 30_000.0,
                "limit.task_bulk": 52_000.0,
                "enqueue.processes_4": 2000.0,
                "limit.task_insert_4": 4000.0,
            },
            pgqueuer_postgres={
                "enqueue.single": 2000.0,
                "enqueue.bulk": 55_000.0,
                "enqueue.processes_4": 2000.0,
            },
            tenure_sqlite={
                "enqueue.single.p50": 0.30,
                "limit.task_insert.p50": 0.13,
                "limit.insert.p50": 0.12,
            },
        )
    )
    single = _status(rows, POSTGRES_SINGLE)
    assert single["status"] == "out of reach"  # 0.75 of its statement: no excuse
    assert single["ceiling"] == {
        "what": "at the store's limit for tenure's write",
        "needed": ">= 1.36",  # 1.5, with 10% for the probe's noise
        "measured": 1.0,
    }
    # the bulk write's own rate is 0.95x the goal: within the probe's noise, missed
    bulk = _status(rows, POSTGRES_BULK)
    assert bulk["status"] == "missed"
    assert round(bulk["ceiling"]["measured"], 3) == round(52 / 55, 3)
    # 4 processes are held to the statement replayed by 4 clients, not by one
    processes = _status(rows, "PostgreSQL, 4 processes, 1 per call: tenure / pgqueuer-postgres")
    assert processes["status"] == "missed"
    assert processes["ceiling"]["measured"] == 2.0
    # the statement alone is 1.08x the INSERT: the client's part is what misses
    latency = _status(rows, "SQLite, 1 task per call: p50 / the store's one-row INSERT")
    assert latency["status"] == "missed"
    assert round(latency["ceiling"]["measured"], 3) == round(0.13 / 0.12, 3)
    printed = lines(rows)
    assert printed[-1] == f"targets: 1 out of reach, 3 missed, {len(TARGETS) - 4} not measured"


def test_a_ceiling_not_measured_says_nothing() -> None:
    rows = evaluate(_run(tenure_postgres={"enqueue.single.p50": 0.50, "limit.insert.p50": 0.20}))
    latency = _status(rows, POSTGRES_LATENCY)
    assert latency["status"] == "missed"
    assert latency["ceiling"]["measured"] is None
    assert (
        "missed: PostgreSQL, 1 task per call: p50 / the store's one-row INSERT 2.50 (<= 1.20);"
        " at the store's limit for tenure's write - (<= 1.32 within reach)"
    ) in lines(rows)


def test_a_miss_without_a_probe_of_the_store_stays_missed() -> None:
    rows = evaluate(
        _run(
            tenure_postgres={"drain.workers_2": 12_000.0, "enqueue.single.p50": 0.5},
            pgqueuer_postgres={"drain.workers_2": 6000.0},
        )
    )
    drain = _status(rows, "drain, 2 worker processes: tenure / pgqueuer-postgres")
    assert drain["status"] == "missed"
    assert "excuse" not in drain
    assert "ceiling" not in drain
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
                "limit.task_insert": 3000.0,
                "drain.workers_1": 15_000.0,
            },
            pgqueuer_postgres={"enqueue.single": 2000.0, "drain.workers_1": 5000.0},
        )
    )
    printed = lines(rows)
    assert len(printed) == len(TARGETS) + 1
    assert (
        "missed: PostgreSQL, 1 task per call: tenure / pgqueuer-postgres 0.80 (>= 1.50);"
        " rate / tenure's own statement replayed 0.53 (>= 0.91 excuses);"
        " at the store's limit for tenure's write 1.50 (>= 1.36 within reach)"
    ) in printed
    assert "met: drain, 1 worker process: tenure / pgqueuer-postgres 3.00 (>= 2.50)" in printed
    assert printed[-1] == f"targets: 1 met, 1 missed, {len(TARGETS) - 2} not measured"


def test_a_saved_run_is_checked_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(
        tenure_postgres={"drain.workers_1": 15_000.0}, pgqueuer_postgres={"drain.workers_1": 5000.0}
    )
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"results": results_json(run)}))

    assert main([str(saved)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == lines(evaluate(run))
    assert "met: drain, 1 worker process: tenure / pgqueuer-postgres 3.00 (>= 2.50)" in printed


def test_a_file_that_is_no_run_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "run.json"
    saved.write_text("[]")
    assert main([str(saved)]) == 1
    assert main([str(tmp_path / "missing.json")]) == 1
    saved.write_text(json.dumps({"results": [{"system": "tenure-sqlite", "key": "k"}]}))
    assert main([str(saved)]) == 1
    assert main([]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 4
    assert errors[0].startswith(f"cannot read a comparison run from {saved}")
    assert errors[2] == f"cannot read a comparison run from {saved}: no 'label' in a result"
    assert main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: python -m benchmarks.compare.targets")


def test_a_ratio_has_exactly_one_bound() -> None:
    with pytest.raises(ValueError, match="one bound"):
        Ratio("a", "k", "b", "k")
    with pytest.raises(ValueError, match="one bound"):
        Ratio("a", "k", "b", "k", at_least=1.0, at_most=2.0)
