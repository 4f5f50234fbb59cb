"""The private PostgreSQL cluster: made, crashed, removed; and a real worker that
lives through ``pg_ctl restart -m immediate`` without being restarted itself."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from chaos.cluster import INSTALL, ClusterUnavailable, PrivateCluster, binaries

from tenure import Status
from tenure.errors import StoreUnavailable
from tenure.store import Store, open_store
from tests.apps import basic
from tests.integration.workers import WorkerProcess, enqueue, wait_until


def test_missing_binaries_are_one_line_naming_the_package(tmp_path: Path) -> None:
    with pytest.raises(ClusterUnavailable) as raised:
        binaries(tmp_path)

    message = str(raised.value)
    assert INSTALL == "apt-get install postgresql-15"
    assert INSTALL in message and "\n" not in message


@pytest.mark.slow
def test_the_cluster_is_private_and_removed_even_when_the_block_fails(
    cluster_binaries: Path,
) -> None:
    seen: list[tuple[PrivateCluster, Path]] = []

    def fail_inside() -> None:
        with PrivateCluster(cluster_binaries) as cluster:
            seen.append((cluster, cluster.data.parent))
            assert (cluster.data / "PG_VERSION").read_text().strip() == "15"
            raise RuntimeError("the block fails")

    with pytest.raises(RuntimeError, match="the block fails"):
        fail_inside()

    [(cluster, root)] = seen
    assert cluster.port != 5432 and cluster.url().startswith("postgresql://postgres@127.0.0.1:")
    assert cluster.root is None and not root.exists()


@pytest.mark.slow
def test_a_worker_runs_on_across_an_immediate_restart(
    cluster: PrivateCluster, tmp_path: Path
) -> None:
    url = cluster.create_database("restart")
    gate = tmp_path / "gate"
    with open_store(url) as store:
        worker = WorkerProcess(url, "--lease", "2", app="tests.apps.basic:app")
        try:
            before = [enqueue(store, basic.add, n, n) for n in range(3)]
            for task in before:
                assert wait_until(store, task.id, lambda t: t.finished).status is Status.DONE
            across = enqueue(store, basic.blocks, str(gate), "across")
            wait_until(store, across.id, lambda t: t.status is Status.RUNNING)

            cluster.restart("immediate")

            gate.touch()  # its ending is written once the server is back
            after = [_enqueue_once_back(store, n) for n in range(3)]
            for task_id in [across.id, *after]:
                done = wait_until(store, task_id, lambda t: t.finished, timeout=30)
                assert done.status is Status.DONE, done
            assert store.task_get(across.id).result == "across"  # type: ignore[union-attr]
            # The same process, which saw the server go, never restarted.
            worker.wait_for_log("lost its connection")
            assert worker.process.poll() is None
        finally:
            worker.stop()


def _enqueue_once_back(store: Store, n: int) -> str:
    """Enqueue, trying again while the store's pool still holds dead connections
    (the first use of each after the restart fails, and is replaced)."""
    for _ in range(20):
        try:
            return enqueue(store, basic.add, n, n).id
        except StoreUnavailable:
            continue
    raise AssertionError("the store never took an enqueue after the restart")


OUTAGE = 35.0
"""Seconds the server stays down: long enough for a doubling wait between
reconnection attempts (1, 2, 4 ... 32 s) to outgrow the recovery bound."""
BACK_WITHIN = 10.0


@pytest.mark.slow
def test_a_worker_takes_work_within_ten_seconds_of_a_long_outage_ending(
    cluster: PrivateCluster,
) -> None:
    """A worker's pool (and its retry pause) keeps trying often enough that a
    server back after half a minute has the worker's next task done within
    seconds."""
    url = cluster.create_database("outage")
    with open_store(url) as store:
        worker = WorkerProcess(url, "--lease", "2", app="tests.apps.basic:app")
        try:
            first = enqueue(store, basic.add, 1, 1)
            assert wait_until(store, first.id, lambda t: t.finished).status is Status.DONE

            cluster.stop("immediate")
            time.sleep(OUTAGE)  # the outage itself, not a wait for an outcome
            cluster.start()
            back = time.monotonic()

            task_id = _enqueue_once_back(store, 2)
            done = wait_until(store, task_id, lambda t: t.finished, timeout=30)
            assert done.status is Status.DONE
            took = time.monotonic() - back
            assert took <= BACK_WITHIN, (took, worker.lines[-5:])
        finally:
            worker.stop()
