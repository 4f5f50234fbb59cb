"""The precompiled argument check of a task function agrees with
``inspect.Signature.bind``: it never accepts what ``bind`` refuses, it accepts
the ordinary calls itself, and a refusal is still worded by ``bind``."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from tenure import App, InvalidInput
from tenure.function import _binder


def plain(a: int, b: int = 2) -> None: ...
def nothing() -> None: ...
def star(a: int, *rest: int, k: int, j: int = 0, **extra: int) -> None: ...
def only(a: int, b: int, /, c: int = 3) -> None: ...
def only_and_extra(a: int, /, **extra: int) -> None: ...
def keywords(*, k: int, j: int = 0) -> None: ...
def everything(a: int, /, b: int, *args: int, c: int, d: int = 4, **kw: int) -> None: ...


FUNCTIONS: list[Callable[..., None]] = [
    plain,
    nothing,
    star,
    only,
    only_and_extra,
    keywords,
    everything,
]
NAMES = ["a", "b", "c", "d", "j", "k", "rest", "extra", "zz"]


def calls() -> list[tuple[tuple[int, ...], dict[str, int]]]:
    """Every call of up to four positional arguments and up to three keywords."""
    found = []
    for count in range(5):
        for size in range(4):
            for keys in itertools.combinations(NAMES, size):
                found.append((tuple(range(count)), dict.fromkeys(keys, 1)))
    return found


def binds(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_the_binder_says_what_signature_bind_says(fn: Callable[..., None]) -> None:
    signature = inspect.signature(fn)
    fits = _binder(signature)
    accepted = 0
    for args, kwargs in calls():
        expected = binds(signature, args, kwargs)
        if fits(args, kwargs):
            assert expected, (fn.__name__, args, kwargs)
            accepted += 1
        elif expected:
            # Unsure cases are left to bind: only a positional-only name given
            # as a keyword into **kwargs is one.
            assert fn in (only_and_extra, everything), (fn.__name__, args, kwargs)
            assert "a" in kwargs
    assert accepted > 0


def test_a_refusal_is_worded_by_signature_bind() -> None:
    app = App("sqlite:///:memory:")
    task = app.task(name="t")(plain)
    with pytest.raises(InvalidInput, match="missing a required argument: 'a'"):
        task.enqueue_many([{"b": 1}])
    with pytest.raises(InvalidInput, match="too many positional arguments"):
        task.call(1, 2, 3)  # type: ignore[call-arg]
