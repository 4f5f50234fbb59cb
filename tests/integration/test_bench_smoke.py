"""``tenure bench --quick`` on SQLite: the suite runs end to end (real worker
processes included) and writes JSON of the documented shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenure.cli import main

pytestmark = pytest.mark.slow

EXPECTED = {
    "enqueue.single",
    "enqueue.bulk",
    "drain.workers_1",
    "drain.workers_2",
    "pickup.p50",
    "pickup.p95",
    "pickup.p99",
    "reserve.history_1000",
    "reserve.history_10000",
    "limit.single",
    "limit.batch_100",
    "memory.growth",
    "memory.rss",
}


def test_quick_run_on_sqlite_writes_every_measurement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "results" / "bench.json"
    argv = ["bench", "--quick", "--stores", "sqlite", "--repeat", "1", "--output", str(output)]

    assert main(argv) == 0

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
    assert "tenure bench" in capsys.readouterr().out


def test_unknown_store_is_refused(tmp_path: Path) -> None:
    assert main(["bench", "--stores", "mongo", "--output", str(tmp_path / "x.json")]) == 2
    assert not (tmp_path / "x.json").exists()
