"""How a cancel reaches a busy worker on PostgreSQL without costing the hot
path: the cancel and revoke statements notify ``tenure_leases`` when they take
a running task from its holder, and nothing else does (a holder's own endings,
a cancel of a task nobody runs, a snoozed task woken); and a worker running
tasks keeps no event notifications on (each commit that notifies commits
alone: see migration 0011)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from tenure import Status
from tenure.store import Completion, NewTask, ReserveParams
from tenure.store.postgres.backend import PostgresStore
from tests.apps import control
from tests.conformance.support import lease_of
from tests.conftest import _empty_postgres
from tests.integration.waiting import heard
from tests.integration.workers import WorkerProcess, enqueue, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def url(postgres_url: str) -> str:
    _empty_postgres(postgres_url)
    return postgres_url


def notices(listening: psycopg.Connection[Any], url: str) -> int:
    """How many lease notices ``listening`` was sent up to now."""
    return len(heard(listening, url, "tenure_leases"))


def test_only_a_running_task_taken_from_its_holder_is_noticed(url: str) -> None:
    store = PostgresStore(url, role="admin")
    try:
        with psycopg.connect(url, autocommit=True) as listening:
            listening.execute("LISTEN tenure_leases")
            created = store.task_create_many([NewTask(topic="t", name="n") for _ in range(6)])
            reserved = store.task_reserve(ReserveParams(owner="w", limit=4))
            done, snoozed, taken, revoked = reserved
            leases = {t.id: lease_of(t, "w") for t in reserved}
            store.task_complete_many([Completion(leases[done.id], "1")])
            store.task_snooze(leases[snoozed.id], 60)
            pending = [t for t in created if t.status is Status.PENDING][-1]
            store.task_cancel(pending.id)  # nobody held it
            asleep = store.task_get(snoozed.id)
            assert asleep is not None and store.task_revoke(asleep.id, asleep.record_ver)
            assert notices(listening, url) == 0

            store.task_cancel(taken.id)
            assert notices(listening, url) == 1
            store.task_revoke(revoked.id, revoked.record_ver)
            assert notices(listening, url) == 1
    finally:
        store.close()


def test_a_worker_running_tasks_keeps_no_event_notifications_on(url: str, tmp_path: Path) -> None:
    store = PostgresStore(url, role="admin")
    worker = WorkerProcess(url, "--concurrency", "2", app="tests.apps.control:app")
    try:
        task = enqueue(store, control.watches_flag, str(tmp_path))
        wait_for((tmp_path / "started").exists, "the task's start", timeout=30)
        with psycopg.connect(url, autocommit=True) as admin:
            wanted = "SELECT count(*) FROM tenure.wake_wanted WHERE events"
            assert admin.execute(wanted).fetchone() == (0,)
        store.task_cancel(task.id)
        wait_for((tmp_path / "stopped").exists, "the task's stop", timeout=5)
    finally:
        worker.stop()
        store.close()
