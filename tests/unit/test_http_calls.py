"""The document's description of a task's calls (:mod:`tenure.http.calls`)
accepts exactly the ``args`` and ``kwargs`` a Python call takes (and tenure's
check of an enqueue),
over every shape of signature: positional-only, positional-or-keyword,
``*args``, keyword-only and ``**kwargs`` parameters, with and without defaults;
and a body that leaves ``args`` or ``kwargs`` out means ``[]`` or ``{}``."""

from __future__ import annotations

import inspect
from typing import Any

import jsonschema_rs
from hypothesis import given, settings
from hypothesis import strategies as st

from tenure import App
from tenure.declaration import TaskConfig
from tenure.errors import InvalidInput
from tenure.function import TaskFunction
from tenure.http.calls import calls

P = inspect.Parameter
NAMES = ("a", "b", "c", "d", "e")


@st.composite
def signatures(draw: st.DrawFn) -> inspect.Signature:
    """Any valid signature over a few names: positional parameters (their
    defaults a suffix), maybe ``*args``, keyword-only ones, maybe ``**kwargs``."""
    names = iter(draw(st.permutations(NAMES)))
    positional = draw(st.lists(st.sampled_from([P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD]),
                               max_size=3).map(sorted))  # fmt: skip
    first_default = draw(st.integers(0, len(positional)))
    params = [P(next(names), kind, default=1 if i >= first_default else P.empty)
              for i, kind in enumerate(positional)]  # fmt: skip
    if draw(st.booleans()):
        params.append(P("rest", P.VAR_POSITIONAL))
    for _ in range(draw(st.integers(0, 5 - len(positional)))):
        params.append(P(next(names), P.KEYWORD_ONLY, default=draw(st.sampled_from([P.empty, 1]))))
    if draw(st.booleans()):
        params.append(P("more", P.VAR_KEYWORD))
    return inspect.Signature(params)


BODIES = st.fixed_dictionaries(
    {},
    optional={
        "args": st.lists(st.integers(0, 9), max_size=5),
        "kwargs": st.dictionaries(
            st.sampled_from([*NAMES, "rest", "more", "other"]), st.integers(0, 9), max_size=4
        ),
    },
)


def called(signature: inspect.Signature, body: dict[str, Any]) -> bool:
    """Whether Python calls a function of ``signature`` with the body's arguments."""
    scope: dict[str, Any] = {}
    exec(f"def function{signature}: pass", scope)  # a signature drawn above
    try:
        scope["function"](*body.get("args", []), **body.get("kwargs", {}))
    except TypeError:
        return False
    return True


def enqueued(signature: inspect.Signature, body: dict[str, Any]) -> bool:
    """Whether tenure's check of a task's arguments (what the API runs) takes them."""

    def function(*args: Any, **kwargs: Any) -> None: ...

    function.__signature__ = signature  # type: ignore[attr-defined]
    task = TaskFunction(App(), function, TaskConfig(name="job"))
    try:
        task.new_task(body.get("args", []), body.get("kwargs", {}))
    except InvalidInput:
        return False
    return True


@given(signature=signatures(), body=BODIES)
@settings(max_examples=3000, deadline=None)
def test_the_schema_accepts_exactly_the_calls_that_bind(
    signature: inspect.Signature, body: dict[str, Any]
) -> None:
    schema = calls({"job": signature}, "name")
    valid = jsonschema_rs.Draft202012Validator(schema).is_valid({"name": "job", **body})
    assert valid == called(signature, body) == enqueued(signature, body), (str(signature), body)


def test_each_task_is_described_under_its_own_name() -> None:
    def one(x: int) -> None: ...
    def none() -> None: ...

    schema = calls({"one": inspect.signature(one), "none": inspect.signature(none)}, "task")
    valid = jsonschema_rs.Draft202012Validator(schema).is_valid
    assert valid({"task": "one", "args": [1]}) and valid({"task": "none"})
    assert not valid({"task": "none", "args": [1]}) and not valid({"task": "one"})
    assert not valid({"task": "other"})
