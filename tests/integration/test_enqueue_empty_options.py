"""An empty ``id``, ``topic`` or ``sub_topic`` given to ``options()`` is bad
input, refused like any other (``InvalidInput``, nothing written), never
quietly replaced by a new id or the task's default: a caller passing an empty
id would otherwise get a fresh task on every call instead of the one it named."""

from __future__ import annotations

import pytest

import tenure
from tenure.errors import InvalidInput


@pytest.mark.parametrize("option", ["id", "topic", "sub_topic"])
def test_an_empty_option_is_refused_and_writes_nothing(store_url: str, option: str) -> None:
    app = tenure.App(store_url)
    try:

        @app.task(topic="t")
        def noop() -> None:
            return None

        with pytest.raises(InvalidInput) as refused:
            noop.options(**{option: ""}).enqueue()  # type: ignore[misc]

        assert refused.value.field == option
        assert app.store.task_count() == 0
    finally:
        app.close()
