"""The tenure command, run in-process against a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenure import LockPhase, Status, cli, open_store
from tenure.cli import main
from tenure.store import NewTask, UniqueRule


def test_cli_lists_shows_cancels_and_retries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with open_store(url) as store:
        task = store.task_create(NewTask(topic="emails", name="send", data={"to": "a"}))
    assert main(["--url", url, "migrate"]) == 0
    assert main(["--url", url, "tasks", "--status", "pending"]) == 0
    assert task.id in capsys.readouterr().out
    assert main(["--url", url, "show", task.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["data"] == {"to": "a"}
    assert shown["status"] == "pending"
    assert main(["--url", url, "cancel", task.id]) == 0
    assert main(["--url", url, "retry", task.id]) == 0
    with open_store(url) as store:
        again = store.task_get(task.id)
        assert again is not None
        assert again.status is Status.PENDING


def test_cli_reports_failures_with_exit_code_1_and_mistakes_with_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["--url", url, "cancel", "missing"]) == 1
    assert "no task's id is or begins with" in capsys.readouterr().err
    assert main(["--url", url, "tasks", "--status", "bogus"]) == 2
    assert main(["--url", url, "show", "missing"]) == 1


def test_cli_lists_held_unique_locks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli.console, "width", 160)  # a wide terminal: no column cut
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    rule = UniqueRule(key="ab" * 32, lock=LockPhase.UNTIL_EXECUTED)
    with open_store(url) as store:
        task = store.task_create(NewTask(topic="emails", name="send", unique=rule))
    assert main(["--url", url, "locks"]) == 0
    out = capsys.readouterr().out
    assert task.id in out and "until_executed" in out and "ab" * 8 in out
