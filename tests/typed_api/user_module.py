"""A user's module that uses tenure's typed API as documented: mypy --strict must
accept it, and every ``assert_type`` must hold (checked by test_typed_api)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import assert_type

from tenure import App, TaskHandle

app = App("sqlite:///unused.db")


@app.task(retries=2)
def add(a: int, b: int = 0) -> int:
    return a + b


@app.task
async def fetch(url: str) -> dict[str, str]:
    return {"url": url}


def enqueue_everything() -> None:
    handle = add.enqueue(1, b=2)
    assert_type(handle, TaskHandle[int])
    assert_type(handle.wait(timeout=1.0), int)
    assert_type(handle.result(), int | None)

    later = add.options(delay=5.0, priority=3, description="soon").enqueue(1)
    assert_type(later, TaskHandle[int])
    at = add.options(run_at=datetime(2030, 1, 1, tzinfo=UTC), group_id="g").enqueue(2)
    assert_type(at.result(), int | None)

    many = add.enqueue_many([add.call(1, 2), add.call(3), add.call(a=4)])
    assert_type(many, list[TaskHandle[int]])
    untyped = add.enqueue_many([(1, 2), {"a": 3}])
    assert_type(untyped, list[TaskHandle[int]])

    page = fetch.enqueue("https://example.com")
    assert_type(page, TaskHandle[dict[str, str]])
    assert_type(page.wait(), dict[str, str])
    pages = fetch.enqueue_many([fetch.call("a"), fetch.call(url="b")])
    assert_type(pages, list[TaskHandle[dict[str, str]]])

    assert_type(add(1, 2), int)


async def enqueue_from_async() -> None:
    handle = await add.aenqueue(1, 2)
    assert_type(handle, TaskHandle[int])
    batch = await add.aenqueue_many([add.call(1, 2), (3,)])
    assert_type(batch, list[TaskHandle[int]])
    page = await fetch.options(topic="web").aenqueue("https://example.com")
    assert_type(page.result(), dict[str, str] | None)
