"""Prometheus metrics: the store's figures as a scrape reads them (matching the
store's own counts, cheap with a million tasks on PostgreSQL), and a worker
process's own, served on its --metrics-port."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request

import psycopg
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tenure import App, Status, Store
from tenure.http import create_app
from tenure.metrics import store_registry
from tenure.store import NewTask, TaskFilter
from tests.apps import basic
from tests.conformance.support import reach
from tests.integration.test_postgres_failfast import free_port
from tests.integration.workers import WorkerProcess, enqueue, finished, wait_for, wait_until

TOKEN = "metrics-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(store: Store) -> Samples:
    text = generate_latest(store_registry(lambda: store)).decode()
    return parse(text)


def parse(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def tasks_of(samples: Samples) -> dict[tuple[str, str], float]:
    return {
        (dict(labels)["topic"], dict(labels)["status"]): value
        for (name, labels), value in samples.items()
        if name == "tenure_tasks" and value
    }


def truth(store: Store) -> dict[tuple[str, str], float]:
    """Every (topic, status) pair's count, asked of the store one by one."""
    pairs = {}
    for topic in {t.topic for t in store.task_list(limit=10_000).tasks}:
        for status in Status:
            count = store.task_count(TaskFilter(topic=topic, status=status))
            if count:
                pairs[(topic, status.value)] = float(count)
    return pairs


def test_the_store_figures_match_its_counts(store: Store) -> None:
    for status in (Status.DONE, Status.FAILED, Status.CANCELLED, Status.RUNNING):
        reach(store, status)
    for _ in range(3):
        store.task_create(NewTask(topic="waiting", name="n"))
    samples = scrape(store)
    assert tasks_of(samples) == truth(store)
    assert samples[("tenure_queue_depth", (("topic", "waiting"),))] == 3
    assert samples[("tenure_oldest_pending_seconds", (("topic", "waiting"),))] >= 0
    entered = ("tenure_transitions_total", (("status", "running"), ("topic", "reach-done")))
    assert samples[entered] == 1
    assert samples[("tenure_workers_alive", ())] == 0


def test_a_worker_serves_its_own_metrics(store_url: str, store: Store) -> None:
    port = free_port()
    worker = WorkerProcess(store_url, "--metrics-port", str(port))
    try:
        worker.wait_for_log("metrics on http://127.0.0.1")
        done = [enqueue(store, basic.add, n, n) for n in range(3)]
        failed = enqueue(store, basic.always_fails)
        for task in (*done, failed):
            wait_until(store, task.id, finished)
        samples = wait_for(lambda: _counted(port, failed.name), "the failure counted")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            promtool_check(answer.read().decode())
    finally:
        worker.stop()
    outcome = "tenure_task_outcomes_total"
    assert samples[(outcome, (("name", basic.add.name), ("outcome", "succeeded")))] == 3
    assert samples[(outcome, (("name", failed.name), ("outcome", "retrying")))] == 1
    duration = "tenure_task_duration_seconds_count"
    assert samples[(duration, (("name", basic.add.name), ("outcome", "succeeded")))] == 3
    for kind in ("tasks", "events"):  # the hosted scheduler pruned, and keeps up
        assert samples[("tenure_retention_backlog", (("kind", kind),))] == 0


def _counted(port: int, name: str) -> Samples | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        samples = parse(answer.read().decode())
    key = ("tenure_task_outcomes_total", (("name", name), ("outcome", "failed")))
    return samples if samples.get(key) else None


def test_a_scrape_of_a_million_tasks_is_quick_and_exact(million_url: str) -> None:
    app = App(million_url)
    with TestClient(create_app(app, token=TOKEN)) as client:
        assert client.get("/metrics").status_code == 401  # the API's token, here too
        client.get("/metrics", headers=AUTH)  # the first connection is not what is measured
        began = time.perf_counter()
        answer = client.get("/metrics", headers=AUTH)
        elapsed = time.perf_counter() - began
    app.close()
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    samples = parse(answer.text)
    with psycopg.connect(million_url) as conn:
        counting = "SELECT topic, status, count(*) FROM tenure.tasks GROUP BY 1, 2"
        rows = conn.execute(counting).fetchall()
    assert tasks_of(samples) == {(topic, status): float(n) for topic, status, n in rows}
    assert sum(n for _, _, n in rows) == 1_000_000
    assert elapsed < 0.2, f"a scrape took {elapsed * 1000:.0f} ms"


def test_the_servers_metrics_pass_promtool(store: Store, store_url: str) -> None:
    # The text format, which promtool reads (OpenMetrics it does not: its
    # counter families are named without _total).
    for status in (Status.DONE, Status.FAILED, Status.RUNNING):
        reach(store, status)
    app = App(store_url)
    with TestClient(create_app(app, token=TOKEN)) as client:
        answer = client.get("/metrics", headers={**AUTH, "Accept": "text/plain"})
    app.close()
    assert answer.status_code == 200 and "tenure_tasks" in answer.text
    promtool_check(answer.text)


def promtool_check(exposition: str) -> None:
    """``promtool check metrics`` (Prometheus' own linter, Debian's prometheus
    package) passes on ``exposition``. Missing, it skips with one line, or
    fails where it must be there ($TENURE_REQUIRE_PROMTOOL, which CI sets)."""
    tool = shutil.which("promtool")
    if tool is None:
        if os.environ.get("TENURE_REQUIRE_PROMTOOL"):
            pytest.fail("promtool is missing: apt-get install prometheus")
        pytest.skip("promtool is missing (apt-get install prometheus)")
    checked = subprocess.run(
        [tool, "check", "metrics"],
        input=exposition,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
