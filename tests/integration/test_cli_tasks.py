"""The task commands (enqueue, tasks, show, retry, cancel, purge) and the store
commands (stats, workers, locks, periodic) on SQLite and PostgreSQL: what they
print, as tables and JSON, and one line and the right exit code per mistake."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tenure import Status, Store, TaskError
from tenure.cli import main
from tenure.store import NewTask
from tests.conformance.support import fail_each, reach

APP = "tests.apps.basic:app"


def out_json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_enqueue_by_registered_name_or_as_an_operator(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["enqueue", "tests.apps.basic.add", "--url", store_url, "--args", "[1, 2]"]
    assert main([*argv, "--app", APP, "--priority", "5", "--group", "g", "--json"]) == 0
    made = out_json(capsys)
    assert (made["topic"], made["priority"], made["group_id"]) == ("basic", 5, "g")
    assert made["data"] == {"args": [1, 2], "kwargs": {}}
    assert main([*argv, "--topic", "ops", "--delay", "1h"]) == 0
    printed = capsys.readouterr().out.strip()
    task = store.task_get(printed)  # stdout is the id, for scripts
    assert task is not None and task.topic == "ops" and task.run_at is not None


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--args", "{1"], "--args: not valid JSON"),
        (["--args", '{"a": 1}'], "must be a JSON array"),
        (["--kwargs", "[1]"], "must be a JSON object"),
        (["--app", APP, "--args", "[1]"], "do not fit"),
        (["--app", APP, "--topic", "t"], "--topic"),
        (["--delay", "soon"], "not a duration"),
        (["--app", "nosuchmodule:app"], "nosuchmodule"),
        (["--app", "tests.apps.basic:nothing"], "nothing"),
    ],
)
def test_enqueue_mistakes_are_one_line_and_exit_2(
    store_url: str, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    assert main(["enqueue", "tests.apps.basic.add", "--url", store_url, *extra]) == 2
    assert says in one_line(capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["nosuchcommand"],
        ["tasks", "--nosuchflag"],
        ["tasks", "--limit", "many"],
        ["tasks", "--since", "1000000d"],
    ],
)
def test_command_line_mistakes_are_one_line_and_exit_2(
    store_url: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(["--url", store_url, *argv]) == 2
    assert argv[-1] in one_line(capsys)


def test_an_unregistered_name_with_an_app_is_refused(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["enqueue", "nope", "--url", store_url, "--app", APP]) == 2
    assert "no task named 'nope' is registered" in one_line(capsys)


def test_tasks_lists_newest_first_with_filters_and_pages(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(5):
        store.task_create(NewTask(topic="a" if n % 2 else "b", name="n", id=f"t-{n}"))
    argv = ["tasks", "--url", store_url, "--json"]
    assert main([*argv, "--limit", "2"]) == 0
    first = out_json(capsys)
    assert [t["id"] for t in first["tasks"]] == ["t-4", "t-3"]
    assert main([*argv, "--limit", "2", "--after", first["cursor"]]) == 0
    assert [t["id"] for t in out_json(capsys)["tasks"]] == ["t-2", "t-1"]
    assert main([*argv, "--topic", "a", "--oldest-first"]) == 0
    assert [t["id"] for t in out_json(capsys)["tasks"]] == ["t-1", "t-3"]
    assert main(["tasks", "--url", store_url, "--limit", "2"]) == 0
    table = capsys.readouterr().out
    # Whole words only: the hint repeats the store's path, which may hold "t-2".
    shown = {word for word in table.split() if re.fullmatch(r"t-\d", word)}
    assert "t-4" in shown and "t-2" not in shown and "--after" in table


def test_tasks_and_cancel_take_a_text_of_the_description(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for n, description in enumerate(["Nightly REPORT", "sync 50%", None]):
        store.task_create(NewTask(topic="t", name="n", id=f"d-{n}", description=description))
    assert main(["tasks", "--url", store_url, "--json", "--text", "report"]) == 0
    assert [t["id"] for t in out_json(capsys)["tasks"]] == ["d-0"]
    assert main(["cancel", "--url", store_url, "--text", "50%", "--yes"]) == 0
    assert re.search(r"cancelled 1 task\b", capsys.readouterr().out)  # not "1 tasks"
    assert [t.id for t in store.task_list().tasks if t.status is Status.CANCELLED] == ["d-1"]


def test_show_takes_a_unique_prefix_and_shows_error_and_history(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    failed, _ = reach(store, Status.FAILED)
    assert main(["show", failed.id[:-4], "--url", store_url]) == 0
    shown = capsys.readouterr().out
    assert failed.id in shown and "ValueError" in shown and "new → pending" in shown
    assert main(["show", failed.id, "--url", store_url, "--json"]) == 0
    data = out_json(capsys)
    assert [e["kind"] for e in data["events"]] == ["created", "running", "failed"]
    store.task_create(NewTask(topic="t", name="n", id="dup-1"))
    store.task_create(NewTask(topic="t", name="n", id="dup-2"))
    assert main(["show", "dup-", "--url", store_url]) == 2
    assert "begins more than one task's id" in one_line(capsys)
    assert main(["show", "nothing", "--url", store_url]) == 1
    assert "no task's id is or begins with 'nothing' in" in one_line(capsys)


def test_show_lists_every_attempts_error(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    task = store.task_create(NewTask(topic="e", name="n", max_attempts=3))
    fail_each(store, "e", [TaskError("ValueError", f"bad {n}", "Traceback ...") for n in (1, 2, 3)])
    assert main(["show", task.id, "--url", store_url]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"attempt 1\s+ValueError: bad 1", shown)
    assert re.search(r"attempt 2\s+ValueError: bad 2", shown)
    assert "ValueError: bad 3" in shown
    assert main(["show", task.id, "--url", store_url, "--json"]) == 0
    data = out_json(capsys)
    assert [(e["attempt"], e["message"]) for e in data["errors"]] == [
        (1, "bad 1"), (2, "bad 2"), (3, "bad 3"),
    ]  # fmt: skip
    failed = [e for e in data["events"] if e["kind"] in ("pending", "failed") and e["error_type"]]
    assert [e["error_message"] for e in failed] == ["bad 1", "bad 2", "bad 3"]


def test_show_tells_a_running_tasks_progress(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    running, lease = reach(store, Status.RUNNING)
    assert lease is not None
    store.task_progress(lease, 0.4, "step 2 of 5")
    assert main(["show", running.id, "--url", store_url]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"progress\s+0\.4\b", shown) and "step 2 of 5" in shown
    assert main(["show", running.id, "--url", store_url, "--json"]) == 0
    data = out_json(capsys)
    assert (data["progress"], data["progress_note"]) == (0.4, "step 2 of 5")


def test_retry_and_cancel_by_ids_and_by_filter(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = [reach(store, Status.FAILED)[0] for _ in range(3)]
    pending = store.task_create(NewTask(topic="t", name="n"))
    assert main(["cancel", pending.id, "--url", store_url]) == 0
    assert pending.id in capsys.readouterr().out
    # By filter: asked first; without a terminal, nothing is done without --yes.
    by_filter = ["retry", "--url", store_url, "--status", "failed"]
    assert main(by_filter) == 2
    assert "add --yes" in one_line(capsys)
    assert all(store.task_get(t.id).status is Status.FAILED for t in failed)  # type: ignore[union-attr]
    assert main([*by_filter, "--yes"]) == 0
    assert "retried 3 tasks" in capsys.readouterr().out
    assert all(store.task_get(t.id).status is Status.PENDING for t in failed)  # type: ignore[union-attr]
    # A refused change is counted, named, and fails the command.
    assert main(["retry", pending.id, failed[0].id, "--url", store_url]) == 1
    captured = capsys.readouterr()
    assert "retried 1 task, 1 refused" in captured.out and failed[0].id in captured.err
    assert main(["retry", "--url", store_url]) == 2  # neither ids nor filters


def test_purge_deletes_old_finished_tasks_of_the_statuses_given(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    done, _ = reach(store, Status.DONE)
    failed, _ = reach(store, Status.FAILED)
    argv = ["purge", "--url", store_url, "--status", "done", "--older-than", "0s"]
    assert main(argv) == 2  # no terminal to ask on
    assert main([*argv, "--yes"]) == 0
    assert "deleted 1 done tasks" in capsys.readouterr().out
    assert store.task_get(done.id) is None and store.task_get(failed.id) is not None
    assert main(["purge", "--url", store_url, "--status", "pending", "--older-than", "1d"]) == 2


def test_stats_match_the_store(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reach(store, Status.DONE)
    for _ in range(2):
        store.task_create(NewTask(topic="waiting", name="n"))
    assert main(["stats", "--url", store_url, "--json"]) == 0
    stats = out_json(capsys)
    assert stats["counts"] == {"reach-done": {"done": 1}, "waiting": {"pending": 2}}
    assert stats["endings"] == {"reach-done": {"done": 1}}
    assert set(stats["oldest_pending"]) == {"waiting"} and stats["workers_alive"] == 0
    assert main(["stats", "--url", store_url]) == 0
    table = capsys.readouterr().out
    assert "waiting" in table and "0 workers alive" in table


def test_workers_locks_and_periodic_print_json(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("workers", "locks"):
        assert main([command, "--url", store_url, "--json"]) == 0
        assert out_json(capsys) == []
    argv = ["periodic", "--url", store_url, "--app", "tests.apps.periodic:app"]
    assert main([*argv, "--json"]) == 0
    [tick] = out_json(capsys)
    assert tick["cron"] == "* * * * * *" and tick["last_task_id"] is None
    assert (tick["origin"], tick["declared"], tick["paused"]) == ("code", True, False)
    assert tick["next_tick"] is not None
    assert main(argv) == 0
    assert "never" in capsys.readouterr().out


def test_periodic_schedules_are_added_paused_edited_and_removed(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    app = ["--url", store_url, "--app", "tests.apps.basic:app"]
    added = ["periodic", "add", "sums", "tests.apps.basic.add", "5m", *app, "--json"]
    assert main([*added, "--args", "[1, 2]"]) == 0
    shown = out_json(capsys)
    assert (shown["every"], shown["args"], shown["origin"]) == (300.0, [1, 2], "store")
    assert main(["periodic", "pause", "sums", "--url", store_url]) == 0
    assert "paused sums" in capsys.readouterr().err
    edited = ["periodic", "edit", "sums", "--url", store_url, "--json"]
    assert main([*edited, "--schedule", "0 9 * * 1-5", "--tz", "Europe/Berlin"]) == 0
    shown = out_json(capsys)
    assert (shown["cron"], shown["tz"], shown["paused"]) == ("0 9 * * 1-5", "Europe/Berlin", True)
    assert main(["periodic", "resume", "sums", "--url", store_url]) == 0
    capsys.readouterr()
    assert main(["periodic", "--url", store_url]) == 0
    listed = capsys.readouterr().out
    assert "sums" in listed and "0 9 * * 1-5 (Europe/Berlin)" in listed and "run time" in listed
    # An interval for a cron schedule with a zone: the zone goes with the cron.
    assert main([*edited, "--schedule", "30s"]) == 0
    shown = out_json(capsys)
    assert (shown["every"], shown["cron"], shown["tz"]) == (30.0, None, None)
    assert main(["periodic", "remove", "sums", "--url", store_url]) == 0
    assert store.schedule_list() == []


def test_a_schedule_from_code_is_removed_only_knowing_the_code(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    app = ["--app", "tests.apps.periodic:app"]
    # Paused before any scheduler stored it: stored then, and paused.
    assert (
        main(["periodic", *app, "pause", "tests.apps.periodic.every_second", "--url", store_url])
        == 0
    )
    [stored] = store.schedule_list()
    assert stored.origin == "code" and stored.paused
    capsys.readouterr()
    assert main(["periodic", "remove", stored.name, "--url", store_url]) == 2
    assert "--app" in capsys.readouterr().err
    assert main(["periodic", "remove", stored.name, "--url", store_url, *app]) == 2
    assert "declared in code" in capsys.readouterr().err
    assert [s.name for s in store.schedule_list()] == [stored.name]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["add", "x", "tests.apps.basic.add", "every day"], "not a valid cron expression"),
        (["add", "x", "no.such.task", "5m"], "no task named 'no.such.task'"),
        (["add", "x", "tests.apps.basic.add", "5m", "--args", '["a"]', "--tz", "UTC"], "spec.tz"),
        (["add", "x", "tests.apps.basic.add", "5m", "--kwargs", '{"z": 1}'], "do not fit"),
        (["pause", "missing"], "no schedule named 'missing'"),
    ],
)
def test_periodic_mistakes_get_one_line(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    code = main(["periodic", *argv, "--url", store_url, "--app", "tests.apps.basic:app"])
    err = capsys.readouterr().err
    assert code in (1, 2) and said in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2
    assert store.schedule_list() == []


@pytest.mark.parametrize(
    "argv",
    [
        ["tasks"],
        ["show", "0123"],
        ["events"],
        ["events", "--follow"],
        ["stats"],
        ["workers"],
        ["locks"],
        ["report"],
    ],
)
def test_a_command_that_only_reads_never_creates_a_sqlite_store(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TENURE_URL", raising=False)
    assert main([*argv, "--url", "sqlite:///tenure.db"]) == 1
    assert one_line(capsys) == (
        f"error: no tenure store at {tmp_path / 'tenure.db'} (run from your project's folder, "
        "set TENURE_URL, or `tenure migrate` to create one)"
    )
    assert not (tmp_path / "tenure.db").exists()
    assert main(["migrate", "--url", "sqlite:///tenure.db"]) == 0  # then it is there to read
    capsys.readouterr()
    if argv[0] != "show" and "--follow" not in argv:
        assert main([*argv, "--url", "sqlite:///tenure.db"]) == 0


def test_retry_cancel_and_purge_print_what_they_changed_as_json(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = [reach(store, Status.FAILED)[0] for _ in range(2)]
    pending = store.task_create(NewTask(topic="t", name="n"))
    assert main(["cancel", pending.id[:-3], "--url", store_url, "--json"]) == 0
    cancelled = out_json(capsys)
    assert [(t["id"], t["status"]) for t in cancelled["cancelled"]] == [(pending.id, "cancelled")]
    assert cancelled["refused"] == []
    by_filter = ["retry", "--url", store_url, "--status", "failed", "--yes", "--json"]
    assert main(by_filter) == 0
    retried = out_json(capsys)
    assert sorted(t["id"] for t in retried["retried"]) == sorted(t.id for t in failed)
    assert {t["status"] for t in retried["retried"]} == {"pending"}
    assert main(by_filter) == 0  # nothing matches any more: still JSON
    assert out_json(capsys) == {"retried": [], "refused": []}
    assert main(["retry", pending.id, failed[0].id, "--url", store_url, "--json"]) == 1
    both = out_json(capsys)
    assert [t["id"] for t in both["retried"]] == [pending.id]
    assert [r["id"] for r in both["refused"]] == [failed[0].id]
    assert "cannot go from pending" in both["refused"][0]["error"]
    done, _ = reach(store, Status.DONE)
    purge = ["purge", "--url", store_url, "--status", "done", "--older-than", "0s", "--yes"]
    assert main([*purge, "--json"]) == 0
    assert out_json(capsys) == {"deleted": 1, "status": ["done"], "older_than_seconds": 0.0}
    assert store.task_get(done.id) is None


def test_retry_and_cancel_take_a_unique_prefix_and_refuse_an_ambiguous_one(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    failed, _ = reach(store, Status.FAILED)
    assert main(["retry", failed.id[:-4], "--url", store_url]) == 0
    assert store.task_get(failed.id).status is Status.PENDING  # type: ignore[union-attr]
    capsys.readouterr()
    store.task_create(NewTask(topic="t", name="n", id="dup-1"))
    store.task_create(NewTask(topic="t", name="n", id="dup-2"))
    assert main(["cancel", "dup-", "--url", store_url]) == 2
    assert "'dup-' begins more than one task's id" in one_line(capsys)
    assert {store.task_get(i).status for i in ("dup-1", "dup-2")} == {Status.PENDING}  # type: ignore[union-attr]
