"""The App owns opening its store: once, whatever the number of threads that
ask at the same time, on every Python the package supports (from 3.12 on,
``functools.cached_property`` no longer locks, and eight threads opened eight
stores: this test fails there on the code before, and CI runs it on 3.12 and
3.13); ``opened`` says whether it is open, ``close`` and ``using`` swap it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import tenure.app
from tenure import App
from tenure.errors import ConfigError
from tenure.store import Store

THREADS = 32


def test_32_threads_asking_at_once_open_one_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[Store] = []
    real_open = tenure.app.open_store
    asked = threading.Condition()
    asking = 0

    def held_open(url: str, **options: object) -> Store:
        # The first opening lasts until every thread has asked for the store
        # (opening takes a while: a pool connecting, migrations), so that each
        # asks while it is under way.
        with asked:
            assert asked.wait_for(lambda: asking == THREADS, timeout=10)
        store = real_open(url, **options)  # type: ignore[arg-type]
        opened.append(store)
        return store

    monkeypatch.setattr(tenure.app, "open_store", held_open)
    app = App(f"sqlite:///{tmp_path / 'tenure.db'}")
    got: list[object] = [None] * THREADS

    def ask(index: int) -> None:
        nonlocal asking
        with asked:
            asking += 1
            asked.notify_all()
        got[index] = app.store if index % 2 else app.tasks.store

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(opened) == 1
        assert all(store is opened[0] for store in got)
        assert app.tasks is app.tasks
    finally:
        app.close()


def test_opened_says_whether_the_store_is_open_and_close_opens_it_anew(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'tenure.db'}")
    assert not app.opened
    first = app.store
    assert app.opened and app.tasks.store is first
    app.close()
    assert not app.opened
    second = app.store
    assert second is not first and app.tasks.store is second
    with pytest.raises(ConfigError, match="open already"):
        app.use(f"sqlite:///{tmp_path / 'other.db'}")
    app.close()
    app.close()  # closing a closed App does nothing


def test_using_another_store_leaves_the_apps_own_as_it_was(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'own.db'}")
    own = app.store
    with app.using(f"sqlite:///{tmp_path / 'other.db'}") as inside:
        assert inside is app and app.store is not own
        assert app.url.endswith("other.db") and app.tasks.store is app.store
    assert app.store is own and app.tasks.store is own and app.url.endswith("own.db")
    app.close()
    with app.using(f"sqlite:///{tmp_path / 'other.db'}"):
        assert app.store is not None
    assert not app.opened


def test_the_end_of_using_opens_nothing_anew_while_it_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread asking for the store while the block's store closes gets
    the App's own, never a new store on the block's URL left open."""
    opened: list[Store] = []
    real_open = tenure.app.open_store

    def counted(url: str, **options: object) -> Store:
        store = real_open(url, **options)  # type: ignore[arg-type]
        opened.append(store)
        return store

    monkeypatch.setattr(tenure.app, "open_store", counted)
    app = App(f"sqlite:///{tmp_path / 'own.db'}")
    own = app.store
    stop = threading.Event()
    answered = threading.Condition()
    answers = 0

    def ask() -> None:
        nonlocal answers
        while not stop.is_set():
            app.store  # noqa: B018
            with answered:
                answers += 1
                answered.notify_all()

    asking = threading.Thread(target=ask)
    with app.using(f"sqlite:///{tmp_path / 'other.db'}"):
        inside = app.store
        real_close = inside.close

        def held_close() -> None:
            # Closing takes a while (a pool draining its connections): the
            # other thread asks for the store, and is answered, meanwhile.
            with answered:
                since = answers
                assert answered.wait_for(lambda: answers >= since + 2, timeout=10)
            real_close()

        monkeypatch.setattr(inside, "close", held_close)
        asking.start()
    stop.set()
    asking.join()
    try:
        assert opened == [own, inside]
    finally:
        app.close()
