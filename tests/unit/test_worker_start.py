"""What a worker says as it starts: which store, and the tasks it can never take."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import tenure
from tenure.worker.serving import untakeable
from tenure.worker.worker import Worker


def test_tasks_a_worker_can_never_take_are_named_with_the_reason() -> None:
    app = tenure.App("sqlite:///unused.db")

    @app.task(topic="render", tags={"gpu", "ssd"})
    def render() -> None: ...

    @app.task(topic="mail")
    def send() -> None: ...

    @app.task(topic="render", tags={"ssd"})
    def thumbnail() -> None: ...

    found = untakeable(app.registry.values(), ["render"], frozenset({"ssd"}))
    assert len(found) == 2
    assert "requires tags gpu that this worker lacks" in found[0]
    assert "--tags gpu,ssd" in found[0]
    assert f"task {send.name} (topic 'mail') never runs on this worker" in found[1]
    assert untakeable(app.registry.values(), ["mail", "render"], frozenset({"gpu", "ssd"})) == []


def test_the_start_line_names_the_absolute_store_and_what_the_worker_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    app = tenure.App("sqlite:///relative.db")

    @app.task(topic="mail", tags={"smtp"})
    def send() -> None: ...

    worker = app.worker(concurrency=2, scheduler=False, poll_interval=0.05)
    worker.stop()  # stops before reserving anything: only the start is logged
    with caplog.at_level(logging.INFO, logger="tenure.worker"):
        assert worker.run() == 0
    [line] = [r.getMessage() for r in caplog.records if "started: store=" in r.getMessage()]
    assert f"store=sqlite:///{tmp_path / 'relative.db'}" in line
    assert f"tasks={send.name}" in line and "topics=mail" in line
    assert "tags=-" in line and "pool=threads concurrency=2" in line
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "requires tags smtp" in warning.getMessage()
    app.close()


def test_a_worker_checks_results_against_the_limit_its_store_applies(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'w.db'}")

    @app.task(topic="t")
    def big() -> str:
        return "x" * 100

    store = tenure.open_store(f"sqlite:///{tmp_path / 'w.db'}", max_payload_bytes=64)
    worker = Worker(store, app.registry, poll_interval=0.05)
    worker.stop()
    assert worker.run() == 0
    assert app.registry.max_payload_bytes == 64  # the smaller: a result never refused late
    store.close()
