"""``make bench`` in quick mode, on SQLite: ``python -m benchmarks.suite`` runs end
to end (real worker processes included) and writes JSON of the documented shape.
It runs as ``make bench`` runs it, in a process of its own from the checkout's root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

FOLLOW = ("p50", "p90", "p99", "max", "delivered")

EXPECTED = {
    "enqueue.single",
    "enqueue.bulk",
    *(
        f"enqueue.{shape}{cut}"
        for shape in ("threads_8", "processes_4")
        for cut in ("", ".p50", ".p99")
    ),
    "drain.workers_1",
    "drain.workers_2",
    "drain.workers_2_topic_limit",
    "pickup.p50",
    "pickup.p95",
    "pickup.p99",
    *(f"{run}.{name}" for run in ("follow", "follow_busy") for name in FOLLOW),
    "reserve.history_1000",
    "reserve.history_10000",
    "limit.single",
    "limit.batch_100",
    "memory.growth",
    "memory.rss",
}


def suite(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m benchmarks.suite`` with ``args``, from the checkout's root."""
    argv = [sys.executable, "-m", "benchmarks.suite", *args]
    return subprocess.run(argv, check=False, cwd=ROOT, capture_output=True, text=True, timeout=240)


def test_quick_run_on_sqlite_writes_every_measurement(tmp_path: Path) -> None:
    output = tmp_path / "results" / "bench.json"

    done = suite("--quick", "--stores", "sqlite", "--repeat", "1", "--output", str(output))

    assert done.returncode == 0, done.stderr[-3000:]

    document = json.loads(output.read_text())
    assert document["quick"] is True
    assert document["repeat"] == 1
    assert {"cpu", "cores", "ram_gib", "python", "sqlite"} <= set(document["machine"])
    assert set(document["stores"]) == {"sqlite"}
    assert document["stores"]["sqlite"]["version"] == document["machine"]["sqlite"]
    results = document["results"]
    assert {r["key"] for r in results} == EXPECTED
    for result in results:
        assert result["store"] == "sqlite"
        assert len(result["samples"]) == 1
        assert result["min"] == result["median"] == result["max"]
        assert result["median"] > 0 or result["key"] == "memory.growth"  # may shrink
        assert result["unit"]
    growth = next(r for r in results if r["key"] == "memory.growth")["params"]
    assert growth["tasks"] == 20_000 and growth["readings"][-1][0] == 20_000
    follow = {r["key"]: r for r in results if r["key"].startswith("follow")}
    for run in ("follow", "follow_busy"):
        # Every enqueued task's event reached the follower process (its speed is
        # the benchmark's figure, not a test's assertion).
        delivered = follow[f"{run}.delivered"]
        assert delivered["median"] == delivered["params"]["tasks"]
    assert "median of 1 run (min-max)" in done.stdout
    assert f"JSON written to {output}" in done.stdout


def test_unknown_store_is_refused(tmp_path: Path) -> None:
    done = suite("--stores", "mongo", "--output", str(tmp_path / "x.json"))

    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: --stores takes some of sqlite, postgres")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()
