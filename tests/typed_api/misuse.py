# ruff: noqa: F841
"""Misuses of tenure's typed API: mypy --strict must report each line marked
``# error: <code>``, and nothing else (checked by test_typed_api)."""

from __future__ import annotations

from tenure import App

app = App("sqlite:///unused.db")


@app.task
def add(a: int, b: int = 0) -> int:
    return a + b


@app.task
async def fetch(url: str) -> str:
    return url


def misuse() -> None:
    add.enqueue("one", 2)  # error: arg-type
    add.enqueue(1, 2, 3)  # error: call-arg
    add.enqueue(c=1)  # error: call-arg
    fetch.enqueue(url=1)  # error: call-overload
    add.options(delay="soon")  # error: arg-type
    add.options(priorty=1)  # error: call-arg
    add.options(priority=1.5)  # error: arg-type
    add.enqueue_many([fetch.call("x")])  # error: list-item
    add.enqueue_many([1, 2])  # error: list-item
    add.call("x")  # error: arg-type
    text: str = add.enqueue(1).wait()  # error: assignment
    number: int = add.enqueue(1).result()  # error: assignment
    title: int = fetch.enqueue("x").wait()  # error: assignment
    app.task(topik="x")  # error: call-overload
    app.task(retries="3")  # error: call-overload


async def misuse_async() -> None:
    await add.aenqueue("one")  # error: arg-type
    await add.aenqueue_many([fetch.call("x")])  # error: list-item
