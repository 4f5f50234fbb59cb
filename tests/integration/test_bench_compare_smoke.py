"""``make bench-compare`` in quick mode, on SQLite: tenure and Huey measured end to
end (real worker processes), the table printed with tenure's ratio, the JSON
written. It runs in .venv-compare, where the competitors are installed from
PyPI; the test creates it the way ``make bench-compare`` does, if it is missing.
``make test`` leaves it out (half a minute, most of it building .venv-compare):
``make bench-compare-smoke`` runs it, in CI after the suites and before every
``make bench-compare``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.compare.targets import PGQUEUER, TARGETS
from benchmarks.suite.producers import PROCESSES
from tests.integration.test_bench_smoke import EXPECTED as BENCH_KEYS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-compare" / "bin" / "python"
# The measurements both suites make (make bench also measures the store alone,
# and tenure's drain under a topic limit, which no other system has).
SHARED = {
    key
    for key in BENCH_KEYS
    if key.split(".")[0] in ("enqueue", "drain", "pickup") and not key.endswith("_topic_limit")
}
# And its own: each call's latency, drains at 10 tasks at once, and the limit
# of the store itself (measured on tenure's).
EXPECTED = SHARED | {
    "enqueue.single.p50",
    "enqueue.single.p99",
    "drain.workers_1_c10",
    "drain.workers_2_c10",
}
LIMITS = {
    "limit.insert",
    "limit.insert.p50",
    "limit.task_insert",
    "limit.task_insert.p50",
    "limit.task_bulk",
    "limit.task_bulk.p50",
}


@pytest.fixture(scope="module")
def compare_venv() -> Path:
    """.venv-compare, installed by the Makefile's own rule (a no-op once done)."""
    built = subprocess.run(
        ["make", ".venv-compare/.installed"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return PYTHON


def test_quick_comparison_on_sqlite(compare_venv: Path, tmp_path: Path) -> None:
    output = tmp_path / "compare.json"
    argv = [str(compare_venv), "-m", "benchmarks.compare", "--quick", "--output", str(output)]
    argv += ["--systems", "tenure-sqlite,huey-sqlite"]

    done = subprocess.run(argv, check=False, cwd=ROOT, capture_output=True, text=True, timeout=240)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "tenure ÷ it" in done.stdout
    document = json.loads(output.read_text())
    assert document["quick"] is True
    assert document["repeat"] == 1
    assert set(document["systems"]) == {"tenure-sqlite", "huey-sqlite"}
    assert document["systems"]["huey-sqlite"]["versus"] == "tenure-sqlite"
    results = document["results"]
    assert {(r["system"], r["key"]) for r in results} == {
        (system, key) for system in ("tenure-sqlite", "huey-sqlite") for key in EXPECTED
    } | {("tenure-sqlite", key) for key in LIMITS}
    assert all(r["median"] > 0 and len(r["samples"]) == 1 for r in results)
    ratios = {r["key"]: r for r in document["ratios"]}
    assert set(ratios) == EXPECTED
    assert all(r["competitor"] == "huey-sqlite" and r["ratio"] > 0 for r in ratios.values())
    (limit,) = document["limits"]
    assert limit["system"] == "tenure-sqlite"
    assert limit["p50_over_insert"] > 0 and limit["rate_share_of_insert"] > 0
    assert limit["p50_over_task_insert"] > 0 and limit["rate_share_of_task_insert"] > 0
    assert limit["task_bulk_rate"] > 0 and limit["bulk_share_of_task_bulk"] > 0
    assert "the store's own one-row INSERT p50" in done.stdout
    assert "tenure's own 1-task insert, replayed" in done.stdout
    assert "store's rate for tenure's own bulk insert" in done.stdout
    # Every target on SQLite is answered by the run; those on PostgreSQL are not.
    answered = {row["target"] for row in document["targets"] if row["status"] != "not measured"}
    assert answered == {
        target.name
        for target in TARGETS
        if target.goal.system == "tenure-sqlite" and target.goal.other != PGQUEUER
    }
    assert len(answered) == 5  # one per call, bulk, latency, two drains
    assert all(row["measured"] > 0 for row in document["targets"] if row["target"] in answered)
    assert "targets: " in done.stdout
    # Every measurement a target names is one the comparison makes: the systems
    # measured here make the same ones as the others on PostgreSQL, which add
    # the statement replayed by as many clients as the producer processes.
    made = {r["key"] for r in results} | {f"limit.task_insert_{PROCESSES}"}
    ratios = [r for t in TARGETS for r in (t.goal, t.excuse, t.ceiling) if r is not None]
    assert {key for r in ratios for key in (r.key, r.other_key)} <= made


def test_the_targets_name_systems_the_comparison_measures(compare_venv: Path) -> None:
    named = "; ".join(
        [
            "from benchmarks.compare.runner import SYSTEMS",
            "from benchmarks.compare.targets import TARGETS",
            "ratios = [r for t in TARGETS for r in (t.goal, t.excuse, t.ceiling) if r is not None]",
            "print(sorted({s for r in ratios for s in (r.system, r.other)} - set(SYSTEMS)))",
        ]
    )
    done = subprocess.run(
        [str(compare_venv), "-c", named], check=False, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
