"""``tenure events`` and ``tenure report`` on SQLite and PostgreSQL: what they
print, as a table and as JSON lines, and one line for each mistake."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tenure import Store
from tenure.cli import main
from tenure.store import NewTask
from tenure.task import Status
from tests.conformance.support import reach


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def json_lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_events_lists_the_newest_as_a_table_and_as_json_lines(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(30):
        store.task_create(NewTask(topic=f"t{n % 2}", name="n", id=f"task-{n}"))
    assert main(["events", "--url", store_url]) == 0
    table = capsys.readouterr().out
    newest = store.event_tail(limit=20)
    assert all(event.cursor in table for event in newest)  # every column kept, piped
    assert "task-29" in table and "task-9 " not in table and "20 events in" in table
    assert f"--after {newest[0].cursor}" in table
    assert main(["events", "--url", store_url, "--json", "--limit", "3"]) == 0
    lines = json_lines(capsys)
    assert [line["task_id"] for line in lines] == ["task-27", "task-28", "task-29"]
    assert set(lines[0]) == {
        "cursor", "kind", "task_id", "topic", "name", "from", "to", "attempt", "owner", "at",
        "error_type", "error_message",
    }  # fmt: skip
    assert (lines[0]["kind"], lines[0]["from"], lines[0]["to"]) == ("created", None, "pending")


def test_events_pages_after_a_cursor_with_filters(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    done, _ = reach(store, Status.DONE)
    other = store.task_create(NewTask(topic="other", name="n", id="other"))
    argv = ["events", "--url", store_url, "--json", "--after", "0.0"]
    assert main([*argv, "--task", done.id]) == 0
    assert [line["kind"] for line in json_lines(capsys)] == ["created", "running", "done"]
    assert main([*argv, "--kind", "done", "--kind", "created"]) == 0
    assert [(e["task_id"], e["kind"]) for e in json_lines(capsys)] == [
        (done.id, "created"),
        (done.id, "done"),
        (other.id, "created"),
    ]
    assert main([*argv, "--topic", "other"]) == 0
    assert [e["task_id"] for e in json_lines(capsys)] == [other.id]


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["--after", "not-a-cursor"], 2, "after: malformed event cursor"),
        (["--limit", "0"], 2, "--limit must be at least 1"),
        (["--kind", "donee"], 2, "did you mean 'done'?"),
    ],
)
def test_events_mistakes_are_one_line(
    store: Store,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    says: str,
) -> None:
    assert main(["events", "--url", store_url, *argv]) == code
    assert says in one_line(capsys)


def test_a_pruned_cursor_is_one_line_saying_so(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = store.task_create(NewTask(topic="t", name="n"))
    store.task_create(NewTask(topic="t", name="n"))
    [old, _] = store.event_list()
    store.event_prune(0, now=store.clock_now() + timedelta(hours=1))
    store.task_create(NewTask(topic="t", name="n"))
    assert main(["events", "--url", store_url, "--after", old.cursor]) == 1
    assert "deleted by retention" in one_line(capsys)
    assert first.id  # created, then pruned with its event


def test_report_lists_the_latest_and_shows_one(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--url", store_url]) == 0
    assert "0 reports in" in capsys.readouterr().out
    slot = store.clock_now().replace(microsecond=0)
    query = {"status": "done", "every": 5}
    store.report_save("done-tasks", slot, owner="s1", query=query, task_ids=["a", "b"], total=7)
    assert main(["report", "--url", store_url]) == 0
    table = capsys.readouterr().out
    assert "done-tasks" in table and "every=5 status=done" in table and " 7 " in table
    assert main(["report", "done-tasks", "--url", store_url, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["task_ids"] == ["a", "b"] and shown["total"] == 7 and shown["query"] == query
    assert main(["report", "nope", "--url", store_url]) == 1
    assert "no report named 'nope'" in one_line(capsys)


def test_events_take_a_unique_beginning_of_a_task_id(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    done, _ = reach(store, Status.DONE)
    store.task_create(NewTask(topic="t", name="n", id="dup-1"))
    store.task_create(NewTask(topic="t", name="n", id="dup-2"))
    argv = ["events", "--url", store_url, "--json", "--after", "0.0"]
    assert main([*argv, "--task", done.id[:-4]]) == 0
    lines = json_lines(capsys)
    assert [(e["task_id"], e["kind"]) for e in lines] == [
        (done.id, "created"),
        (done.id, "running"),
        (done.id, "done"),
    ]
    assert main([*argv, "--task", "dup-"]) == 2
    assert "'dup-' begins more than one task's id" in one_line(capsys)
    assert main([*argv, "--task", "gone-task"]) == 0  # no such task: its id as given
    assert json_lines(capsys) == []
