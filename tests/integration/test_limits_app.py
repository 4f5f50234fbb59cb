"""Limits as an App declares and an operator sets them: a task's limit and
order keys computed from its arguments by name at enqueue (readable, under
the task's name or the limit's own, ``None`` for no key, a long one hashed);
declarations checked when made; a topic limit declared with ``app.limit``
stored by the scheduler as its term begins; ``tenure limit`` and ``tenure
limits`` on the command line, a mistake one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tenure
from tenure import InvalidInput
from tenure.cli import main


@pytest.fixture
def app(tmp_path: Path) -> tenure.App:
    return tenure.App(f"sqlite:///{tmp_path / 'tenure.db'}")


def test_keys_are_computed_from_the_arguments_by_name(app: tenure.App) -> None:
    limit = tenure.Limit(key=lambda account, **_: account, max_running=2)

    @app.task(name="charge", concurrency=limit, ordered_by=lambda account, cents=0, **_: cents)
    def charge(account: Any, cents: int = 5, **extra: Any) -> None: ...

    @app.task(name="refund", concurrency=tenure.Limit(key=lambda account: account, name="acct"))
    def refund(account: str) -> None: ...

    made = charge.enqueue("a-1").task
    assert (made.limit_key, made.limit_max, made.order_key) == ("charge:a-1", 2, "charge:5")
    by_keyword = charge.enqueue(cents=7, account={"id": 3}, note="x").task
    assert (by_keyword.limit_key, by_keyword.order_key) == ('charge:{"id":3}', "charge:7")
    assert refund.enqueue("a-1").task.limit_key == "acct:a-1"
    unkeyed = charge.enqueue(None).task
    assert (unkeyed.limit_key, unkeyed.limit_max) == (None, None)
    long = charge.enqueue("x" * 600).task
    assert long.limit_key is not None and long.limit_key.startswith("charge:sha256:")
    stored = app.store.task_get(made.id)
    assert stored is not None and stored.limit_key == "charge:a-1"


def test_a_fair_key_is_shared_by_every_function_of_a_tenant(app: tenure.App) -> None:
    """A tenant takes its turns whichever of its functions a task runs."""

    @app.task(name="sync", fair_key=lambda tenant, **_: tenant)
    def sync(tenant: str, full: bool = False) -> None: ...

    @app.task(name="export", fair_key=lambda tenant: tenant)
    def export(tenant: str) -> None: ...

    made = [sync.enqueue("acme").task, export.enqueue(tenant="acme").task]
    assert [t.fair_key for t in made] == ["fair:acme", "fair:acme"]
    assert sync.enqueue(None).task.fair_key is None
    stored = app.store.task_get(made[1].id)
    assert stored is not None and stored.fair_key == "fair:acme"


def test_a_declaration_is_checked_when_made(app: tenure.App) -> None:
    for wrong, field in (
        ({"key": 5}, "concurrency.key"),
        ({"key": str, "max_running": 0}, "concurrency.max_running"),
        ({"key": str, "name": ""}, "concurrency.name"),
    ):
        with pytest.raises(InvalidInput, match=field):
            tenure.Limit(**wrong)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="ordered_by"):
        app.task(ordered_by=5)(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="fair_key"):
        app.task(fair_key="tenant")(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="concurrency"):
        app.task(concurrency=3)(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="max_running"):
        app.limit("mail", max_running=0)
    with pytest.raises(InvalidInput, match="per"):
        app.rate("mail", max_starts=5, per=0)
    with pytest.raises(InvalidInput, match="every"):
        app.ageing("mail", every=-1)
    with pytest.raises(InvalidInput, match="most"):
        app.ageing("mail", most=2**31)


def test_a_declared_topic_limit_is_stored_by_the_scheduler(app: tenure.App) -> None:
    app.limit("mail", max_running=4)
    app.rate("mail", max_starts=100, per=60)
    app.ageing("reports", every=30, most=4)
    app.tasks.limit("mail", 9)  # a change at run time holds until the next term
    scheduler = app.scheduler()
    assert scheduler.run_once().leader
    assert [(lim.topic, lim.max_running) for lim in app.tasks.limits()] == [("mail", 4)]
    [rate] = app.tasks.rate_limits()
    assert (rate.topic, rate.max_starts, rate.per_seconds) == ("mail", 100, 60.0)
    [aged] = app.tasks.ageings()
    assert (aged.topic, aged.every_seconds, aged.most) == ("reports", 30.0, 4)
    app.tasks.limit("mail", 2)
    scheduler.run_once()
    assert [lim.max_running for lim in app.tasks.limits()] == [2]


def test_the_command_line_sets_lists_and_lifts_a_limit(
    app: tenure.App, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", app.url]
    assert main(["limit", "mail", "3", *url]) == 0
    assert "mail runs at most 3 at once" in capsys.readouterr().out
    assert main(["limits", "--json", *url]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["topic"], listed["max_running"]) == ("mail", 3)
    assert main(["limit", "mail", "--off", *url]) == 0
    assert "mail runs without a limit" in capsys.readouterr().out
    assert main(["limits", *url]) == 0
    assert "no topic has a limit" in capsys.readouterr().out
    assert main(["rate", "mail", "100", "--per", "1m", *url]) == 0
    assert "mail starts at most 100 per 60 s" in capsys.readouterr().out
    assert main(["rates", "--json", *url]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["max_starts"], listed["per_seconds"]) == (100, 60.0)
    assert main(["rate", "mail", "--off", *url]) == 0
    assert "mail starts without a rate" in capsys.readouterr().out
    assert main(["ageing", "mail", "2m", "--most", "5", *url]) == 0
    assert "mail  +1 priority every 120 s waited, at most +5" in capsys.readouterr().out
    assert main(["aged", "--json", *url]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["every_seconds"], listed["most"]) == (120.0, 5)
    assert main(["ageing", "mail", "--off", *url]) == 0
    assert "mail is taken by priority alone" in capsys.readouterr().out
    assert main(["rate", "mail", "--off", "--json", *url]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "topic": "mail", "max_starts": None, "per_seconds": None, "set_at": None
    }  # fmt: skip
    assert main(["aged", *url]) == 0
    assert "no topic ages" in capsys.readouterr().out
    for wrong in (["limit", "mail", "0"], ["limit", "mail"], ["limit", "mail", "2", "--off"],
                  ["rate", "mail", "5", "--per", "soon"], ["rate", "mail"], ["ageing", "mail"],
                  ["ageing", "mail", "0s"], ["ageing", "mail", "1m", "--most", "0"]):  # fmt: skip
        assert main([*wrong, *url]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_workflow_step_computes_its_keys_from_its_own_arguments(app: tenure.App) -> None:
    """A chain's later step is given what came before it as its first
    argument, unknown at enqueue: its keys come from the arguments it is
    enqueued with, the given one in its place as None."""
    limit = tenure.Limit(key=lambda account, **_: account)

    @app.task(name="first")
    def first() -> int: ...

    @app.task(name="then", concurrency=limit, ordered_by=lambda previous, account: account)
    def then(previous: int, account: str) -> None: ...

    chain = first.s().then(then.s("a-1")).enqueue()
    step = app.store.task_get(chain.tasks[1].id)
    assert step is not None and (step.limit_key, step.order_key) == ("then:a-1", "then:a-1")


def test_a_positional_only_name_given_to_kwargs_keys_by_position(app: tenure.App) -> None:
    @app.task(name="po", ordered_by=lambda account, **_: account)
    def po(account: str, /, **extra: Any) -> None: ...

    assert po.enqueue("a-1", account="other").task.order_key == "po:a-1"
