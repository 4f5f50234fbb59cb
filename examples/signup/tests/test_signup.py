"""The sign-up tasks, tested without worker processes through tenure.testing."""

from __future__ import annotations

import pytest

from signup import mail, tasks
from tenure import App, InvalidInput, Status
from tenure.testing import run_until_empty


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The mail relay, replaced: the addresses messages went to."""
    outbox: list[str] = []

    def send(address: str, subject: str, body: str) -> str:
        outbox.append(address)
        return f"<{len(outbox)}@test>"

    monkeypatch.setattr(mail, "send", send)
    tasks.USERS.clear()
    return outbox


def test_registering_sends_a_welcome(tenure_app: App, sent: list[str]) -> None:
    handle = tasks.register.enqueue("ada@example.com", "Ada")
    drained = run_until_empty(tenure_app)
    assert drained.done == 2
    assert handle.wait(timeout=0) == "ada@example.com"
    assert sent == ["ada@example.com"]


def test_a_relay_that_is_down_is_tried_again(
    tenure_app: App, sent: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = iter([ConnectionError("relay down"), ConnectionError("still down")])

    def flaky(address: str, subject: str, body: str) -> str:
        for failure in failures:
            raise failure
        return "<delivered@test>"

    monkeypatch.setattr(mail, "send", flaky)
    handle = tasks.send_welcome.enqueue("bob@example.com", "Bob")
    drained = run_until_empty(tenure_app)  # the backoff's minutes pass at once
    assert (drained.retried, drained.done) == (2, 1)
    assert handle.wait(timeout=0) == "<delivered@test>"
    assert handle.refresh().attempts == 3


def test_a_bad_address_fails_the_task_with_its_reason(tenure_app: App, sent: list[str]) -> None:
    handle = tasks.register.enqueue("not-an-address", "Nobody")
    assert run_until_empty(tenure_app).failed == 1
    task = handle.refresh()
    assert task.status is Status.FAILED
    assert task.error is not None
    assert "not an email address" in task.error.message
    assert sent == []


def test_eager_mode_runs_everything_before_enqueue_returns(
    tenure_eager: App, sent: list[str]
) -> None:
    handle = tasks.register.enqueue("cy@example.com", "Cy")
    assert handle.status is Status.DONE
    assert sent == ["cy@example.com"]
    assert tasks.count_users.enqueue().result() == 1


def test_arguments_that_json_cannot_carry_are_refused_at_enqueue(tenure_app: App) -> None:
    with pytest.raises(InvalidInput):
        tasks.register.enqueue({"ada@example.com"}, "Ada")  # type: ignore[arg-type]
    assert tenure_app.tasks.count() == 0


def test_each_test_has_a_store_of_its_own(tenure_app: App) -> None:
    assert tenure_app.tasks.count() == 0
    tasks.count_users.enqueue()
    assert tenure_app.tasks.count() == 1
