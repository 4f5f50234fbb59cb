"""The checker catches what it is there to catch.

A deliberately broken build (``tests/chaos/unfenced.py``: the store ignores
lease tokens, the worker never fences itself) runs the zombie scenario: the
resumed zombie's stale ending is accepted, and the checker names it (I3, I5,
I6, Z). Then the journals of a clean run are tampered with, one promise at a
time, and the checker names exactly that promise.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chaos.checker import Bounds, Verdict, check
from chaos.evidence import Evidence, gather
from chaos.journal import FOLDER_VARIABLE, read_folder
from chaos.scenarios import SCENARIOS, Plan, run, tasks
from chaos.verdict import Check, Result

from chaos import journal
from tenure.store import open_store
from tenure.worker.worker import HANDED_BACK
from tests.chaos import tampering
from tests.chaos.tampering import Records

pytestmark = pytest.mark.slow


BROKEN = Plan(
    workers=2,
    concurrency=4,
    workloads=(
        tasks(30, 5, durations=(0.05, 0.3), rate=10),
        # Five leases long: still running well after the zombie is resumed.
        tasks(2, 6, durations=(10.0, 10.0), rate=0.5, batch=1, flaky=0, doomed=0),
    ),
    faults=1,
    every=(0.5, 1.0),
    drain=120,
)
SMALL = Plan(workers=2, concurrency=4, workloads=(tasks(60, 9, flaky=0.3),), drain=120)


def test_a_build_with_fencing_disabled_is_caught(tmp_path: Path) -> None:
    outcome = run(
        "zombie", "sqlite", "quick", tmp_path, app="tests.chaos.unfenced:app", plan=BROKEN
    )

    codes = outcome.verdict.codes()
    assert {"I3", "I5", "I6", "Z"} <= codes, outcome.line()
    assert outcome.verdict.figures.pauses == 1


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run with retries whose journals and store check clean."""
    folder = tmp_path_factory.mktemp("clean")
    outcome = run("baseline", "sqlite", "quick", folder, plan=SMALL)
    assert not outcome.verdict.violations, outcome.line()
    return folder


def recheck(clean: Path, tmp_path: Path, tamper: Callable[[dict[str, Records]], None]) -> Verdict:
    return tampering.recheck(clean, tmp_path, SCENARIOS["baseline"], tamper, plan=SMALL)


def probes(files: dict[str, Records]) -> Records:
    return [r for name, records in files.items() if name.startswith("probe-") for r in records]


def retried(files: dict[str, Records]) -> str:
    """A task that failed its first attempt, was acknowledged so, and then ran again."""
    acked = {str(r["task"]) for r in probes(files) if r["k"] == "ack" and r["kind"] == "retrying"}
    again = {str(r["task"]) for r in probes(files) if r["k"] == "start" and r["attempt"] == 2}
    return sorted(acked & again)[0]


def first(files: dict[str, Records], **match: object) -> dict[str, Any]:
    return next(r for r in probes(files) if all(r.get(k) == v for k, v in match.items()))


def test_untampered_journals_check_clean(clean_run: Path, tmp_path: Path) -> None:
    assert recheck(clean_run, tmp_path, lambda _: None).violations == []


def test_a_missing_end_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def drop_an_end(files: dict[str, Records]) -> None:
        end = first(files, k="end", outcome="ok")
        for records in files.values():
            if end in records:
                records.remove(end)

    assert {"I1", "I3"} <= recheck(clean_run, tmp_path, drop_an_end).codes()


def test_a_second_accepted_ending_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def duplicate_a_success(files: dict[str, Records]) -> None:
        ack = first(files, k="ack", kind="succeeded")
        next(records for records in files.values() if ack in records).append(dict(ack))

    verdict = recheck(clean_run, tmp_path, duplicate_a_success)
    assert verdict.codes() == {"I3"}
    assert verdict.figures.dup_endings == 1


def test_a_rising_priority_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def raise_a_retry(files: dict[str, Records]) -> None:
        task = retried(files)
        first(files, k="start", task=task, attempt=2)["priority"] += 5

    assert recheck(clean_run, tmp_path, raise_a_retry).codes() == {"I7"}


def test_an_older_token_accepted_after_a_newer_one_started_is_caught(
    clean_run: Path, tmp_path: Path
) -> None:
    def start_the_retry_early(files: dict[str, Records]) -> None:
        task = retried(files)
        older = first(files, k="start", task=task, attempt=1)
        first(files, k="start", task=task, attempt=2)["mono"] = older["mono"] + 0.001

    codes = recheck(clean_run, tmp_path, start_the_retry_early).codes()
    assert "I6" in codes and codes <= {"I5", "I6"}


def test_a_lost_enqueue_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def acknowledge_a_phantom(files: dict[str, Records]) -> None:
        enq = next(r for records in files.values() for r in records if r["k"] == "enq")
        enq["ids"].append("01a20000-0000-7000-8000-000000000000")

    verdict = recheck(clean_run, tmp_path, acknowledge_a_phantom)
    assert verdict.codes() == {"I2"} and verdict.figures.lost == 1


def test_a_line_that_does_not_parse_is_caught(clean_run: Path, tmp_path: Path) -> None:
    verdict = recheck(clean_run, tmp_path, lambda _: None)
    assert verdict.violations == []
    journal = next((tmp_path / "journals").glob("probe-*"))
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join([*lines[:1], '{"k": "start", "task"\n', *lines[1:]]))
    with open_store(f"sqlite:///{clean_run / 'chaos.db'}") as store:
        evidence = gather(tmp_path / "journals", store)
    assert check(evidence, Bounds(SMALL)).codes() == {"J"}


def test_a_check_that_raises_costs_the_run_only_its_own_result(clean_run: Path) -> None:
    def cannot_read_this_run(_: Evidence, __: Bounds, out: Result) -> None:
        out.add("X", None, "found before raising")
        raise RuntimeError("a check that cannot read this run")

    with open_store(f"sqlite:///{clean_run / 'chaos.db'}") as store:
        evidence = gather(clean_run / "journals", store)
    usual = SCENARIOS["baseline"].checks
    raising = Check("raising", ("X",), cannot_read_this_run)

    verdict = check(evidence, Bounds(SMALL), [*usual[:4], raising, *usual[4:]])

    assert verdict.unknown.keys() == {"raising"}
    assert "RuntimeError: a check that cannot read this run" in verdict.unknown["raising"]
    assert verdict.violations == []
    assert verdict.valid == "unknown"  # not a pass: one check could not say
    others = {name: result for name, result in verdict.results.items() if name != "raising"}
    assert others == check(evidence, Bounds(SMALL), usual).results
    assert all(result.valid is True for result in others.values())
    assert verdict.figures.tasks == 60


def test_a_grant_never_started_is_caught_unless_its_worker_handed_it_back(
    clean_run: Path, tmp_path: Path
) -> None:
    def never_started(handed_back: bool) -> Callable[[dict[str, Records]], None]:
        def tamper(files: dict[str, Records]) -> None:
            # A task that ran once: dropping a retried task would drop its retry's start too.
            ran_again = {r["task"] for r in probes(files) if r["k"] == "start" and r["attempt"] > 1}
            start = next(
                r
                for r in probes(files)
                if r["k"] == "start" and r["attempt"] == 1 and r["task"] not in ran_again
            )
            records = next(records for records in files.values() if start in records)
            records[:] = [r for r in records if r.get("task") != start["task"]]
            if handed_back:  # what the probe's handler writes for the worker's warning
                records.append({**start, "k": "handback"})

        return tamper

    def unstarted(verdict: Verdict) -> list[str]:
        return [v.message for v in verdict.violations if "never started" in v.message]

    assert unstarted(recheck(clean_run, tmp_path / "dropped", never_started(False)))
    assert not unstarted(recheck(clean_run, tmp_path / "handed", never_started(True)))


def test_the_probe_journals_each_task_its_worker_hands_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    importlib.import_module("chaos.probe")  # the App of the chaos workers installs the handler
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path))
    monkeypatch.setattr(journal, "_opened", {})  # this process's journals, opened afresh
    extra = {"task_id": "t-1", "attempt": 2}
    logging.getLogger("tenure.worker").warning(HANDED_BACK, "t-1", 2, 3.5, extra=extra)
    logging.getLogger("tenure.worker").warning("another warning", extra=extra)

    [line] = read_folder(tmp_path).of_kind("handback")
    assert (line["task"], line["attempt"], line["pid"]) == ("t-1", 2, os.getpid())
