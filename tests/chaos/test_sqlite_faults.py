"""The sqlite-faults scenario's quick profile: the SQLite database on a tmpfs of
its own fills up, then turns read-only, while real producers enqueue and real
workers drain. Every refused enqueue raised a tenure error to its producer,
``PRAGMA integrity_check`` stayed ok, no worker died, nothing acknowledged was
lost, the queue drained; and the disk is unmounted afterwards, even when the
run fails.

Mounting needs root (CI runs as root); elsewhere the tests skip with the reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from chaos.scenarios import run
from chaos.scenarios.sqlite_faults import (
    DiskUnavailable,
    fill,
    integrity_results,
    refusals,
    small_disk,
)

from tests.chaos.test_scenarios import assert_clean

pytestmark = pytest.mark.slow

TYPED = {"StoreError", "StoreUnavailable"}
"""What a producer may catch: the store failed, or cannot write now."""


def test_disk_full_and_a_read_only_file_refuse_enqueues_and_lose_nothing(tmp_path: Path) -> None:
    try:
        outcome = run("sqlite-faults", "sqlite", "quick", tmp_path)
    except DiskUnavailable as exc:
        pytest.skip(str(exc))

    assert_clean(outcome)  # no worker died, nothing acknowledged lost, drained
    seen = refusals(tmp_path / "journals")
    # Both faults really refused enqueues, each with a tenure error (a producer
    # that caught anything else would have stopped: P in the verdict).
    assert seen.disk_full > 0 and seen.read_only > 0 and seen.other == 0, seen
    assert seen.kinds <= TYPED, seen
    checks = integrity_results(tmp_path / "journals")
    assert [result for _, result in checks] == ["ok", "ok", "ok"], checks
    assert not os.path.ismount(tmp_path / "disk")
    assert "refused disk-full" in outcome.line()


class RunFailed(Exception):
    """What a scenario run raises in the middle (here, on purpose)."""


def fail_on_a_full_disk(tmp_path: Path, mounted: list[Path]) -> None:
    with small_disk(tmp_path, size="1m") as disk:
        mounted.append(disk)
        assert os.path.ismount(disk)
        assert fill(disk).stat().st_size > 0
        raise RunFailed


def test_the_small_disk_is_unmounted_when_the_run_fails(tmp_path: Path) -> None:
    mounted: list[Path] = []
    try:
        with pytest.raises(RunFailed):
            fail_on_a_full_disk(tmp_path, mounted)
    except DiskUnavailable as exc:
        pytest.skip(str(exc))
    assert mounted and not os.path.ismount(mounted[0])
