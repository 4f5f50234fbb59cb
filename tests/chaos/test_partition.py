"""The partition scenario's quick profile (PostgreSQL, a private cluster, three
worker hosts in network namespaces of their own, one cut off for three leases),
and its checks catching what they are there to catch: the journals of the
clean run tampered with (a write of the cut-off worker accepted, its task run
again too late, the worker never taking work again).

Making namespaces needs root and ``ip`` (iproute2): elsewhere the tests are
skipped with the reason, unless ``TENURE_REQUIRE_POSTGRES=1`` (CI), which
makes that a failure."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from chaos.checker import Bounds, Verdict, check
from chaos.checks.partition import cuts
from chaos.evidence import Ack, Evidence, Execution, gather
from chaos.harness import Harness, Setup
from chaos.journal import monotonic
from chaos.netns import NetnsUnavailable, Network
from chaos.scenarios import SCENARIOS, Outcome, partition
from chaos.scenarios.base import Context

from tenure.store import open_store
from tests.chaos import tampering
from tests.chaos.conftest import _unavailable
from tests.chaos.test_scenarios import assert_clean, planned

pytestmark = pytest.mark.slow

SCENARIO = SCENARIOS["partition"]
PLAN = SCENARIO.plans["quick"]
BOUNDS = Bounds(PLAN)


@pytest.fixture(scope="module")
def namespaces() -> None:
    """Skip (or fail, where PostgreSQL is required) without network namespaces."""
    try:
        with Network(1):
            pass
    except NetnsUnavailable as exc:
        _unavailable(str(exc))


@pytest.fixture(scope="module")
def partitioned(
    cluster_binaries: Path, namespaces: None, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Outcome, Evidence]:
    """One quick partition run, as :func:`chaos.scenarios.run` runs it, with the
    evidence it gathered (the private cluster is gone once the run is over; the
    tamper tests check the evidence again)."""
    folder = tmp_path_factory.mktemp("partition")
    began = monotonic()
    with partition.target("postgres", folder, None) as (url, cluster):
        setup = Setup(url, folder, PLAN)
        with open_store(url) as store:
            with Harness(setup, store) as harness:
                partition.partition(harness, Context(PLAN, random.Random(0), cluster))
                harness.drain(PLAN.drain)
            evidence = gather(setup.journals, store)
    verdict = check(evidence, BOUNDS, SCENARIO.checks)
    return Outcome("partition", "postgres", verdict, monotonic() - began, folder), evidence


def test_partition(partitioned: tuple[Outcome, Evidence]) -> None:
    outcome, _ = partitioned
    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert 0 < figures.tasks <= planned("partition")  # producers stop after the heal
    assert figures.cuts == PLAN.faults
    # The cut-off host's tasks ran elsewhere within lease + cycle + poll...
    assert figures.rerun and max(figures.rerun) <= BOUNDS.recovery
    assert figures.dup_executions >= 1
    # ...and, healed, it took work again by itself.
    assert len(figures.resume) == PLAN.faults and max(figures.resume) <= 10
    # Every namespace, pair and bridge of the run is gone.
    assert not list(Path("/run/netns").glob("tenure-chaos-*"))


def tampered(partitioned: tuple[Outcome, Evidence], tamper: Callable[[Evidence], None]) -> Verdict:
    return tampering.recheck_evidence(partitioned[1], SCENARIO, tamper)


def cut_off(evidence: Evidence) -> tuple[int, float, float, list[Execution]]:
    """The cut-off worker, the cut, the heal, and its executions in flight then
    (first those run elsewhere since)."""
    pid, cut, heal = cuts(evidence)[0]
    assert heal is not None
    in_flight = [
        run
        for runs in evidence.executions.values()
        for run in runs
        if run.pid == pid and run.start <= cut and (run.end is None or run.end > cut)
    ]
    # Those whose task ran again under a newer token, first.
    in_flight.sort(key=lambda r: not any(x.token > r.token for x in evidence.executions[r.task]))
    assert in_flight, "the cut-off worker had no task in flight"
    return pid, cut, heal, in_flight


def test_untampered_evidence_checks_as_the_run(partitioned: tuple[Outcome, Evidence]) -> None:
    outcome, _ = partitioned
    assert tampered(partitioned, lambda _: None).violations == outcome.verdict.violations


def test_a_write_accepted_after_the_heal_is_caught(partitioned: tuple[Outcome, Evidence]) -> None:
    def accept_the_old_ending(evidence: Evidence) -> None:
        pid, _, heal, in_flight = cut_off(evidence)
        run = in_flight[0]
        evidence.acks.append(Ack(run.task, run.attempt, run.token, "succeeded", pid, heal + 0.5))

    verdict = tampered(partitioned, accept_the_old_ending)
    assert any(v.code == "N" and "after the heal" in v.message for v in verdict.violations)


def test_a_write_accepted_while_cut_off_is_caught(partitioned: tuple[Outcome, Evidence]) -> None:
    def accept_while_cut(evidence: Evidence) -> None:
        pid, cut, _, in_flight = cut_off(evidence)
        run = in_flight[0]
        evidence.acks.append(Ack(run.task, run.attempt, run.token, "retrying", pid, cut + 1.0))

    verdict = tampered(partitioned, accept_while_cut)
    assert any(v.code == "N" and "while cut off" in v.message for v in verdict.violations)


def test_a_task_run_elsewhere_too_late_is_caught(partitioned: tuple[Outcome, Evidence]) -> None:
    def rerun_late(evidence: Evidence) -> None:
        _, _, _, in_flight = cut_off(evidence)
        for run in evidence.executions[in_flight[0].task]:
            if run.token > in_flight[0].token:
                run.start += 10.0
                run.end = None if run.end is None else run.end + 10.0

    verdict = tampered(partitioned, rerun_late)
    assert any(v.code == "I9" and "cut off" in v.message for v in verdict.violations)


def test_a_host_that_never_works_again_is_caught(partitioned: tuple[Outcome, Evidence]) -> None:
    def idle_after_the_heal(evidence: Evidence) -> None:
        pid, _, heal, _ = cut_off(evidence)
        for runs in evidence.executions.values():
            runs[:] = [r for r in runs if r.pid != pid or r.start < heal]

    verdict = tampered(partitioned, idle_after_the_heal)
    assert any(v.code == "N" and "of the heal" in v.message for v in verdict.violations)


def test_a_stale_reservation_run_after_the_heal_is_caught(
    partitioned: tuple[Outcome, Evidence],
) -> None:
    def run_a_superseded_token(evidence: Evidence) -> None:
        pid, _, heal, in_flight = cut_off(evidence)
        old = in_flight[0]
        runs = evidence.executions[old.task]
        runs.remove(old)  # as if it had begun only once its reply came back
        late = Execution(old.task, old.attempt, old.token, old.owner, pid, old.priority, heal + 1.0)
        late.end, late.outcome = heal + 1.2, "abandon"
        runs.append(late)
        runs.sort(key=lambda r: (r.token, r.start))

    verdict = tampered(partitioned, run_a_superseded_token)
    assert any(v.code == "N" and "after a newer token" in v.message for v in verdict.violations)
