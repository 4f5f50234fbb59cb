"""The JSON Schema of the calls a registered task takes: which ``args`` and
``kwargs`` bind to its signature, as a Python call binds them (and as the
enqueue's own check, :func:`tenure.function._binder`, decides).

The HTTP API refuses an enqueue (or a schedule) whose arguments could never
bind, with a 422, before anything is stored. So that its document says exactly
what it accepts, each registered task is described by the calls that bind: one
alternative per number of positional arguments given, each naming the keyword
arguments it then needs, allows and forbids. Argument values are left open:
the server checks how many arguments are given and under which names, not their
types, which a task's type hints state for Python, not for JSON.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from tenure.http.schemas import Schema

_KIND = inspect.Parameter
_POSITIONAL = (_KIND.POSITIONAL_ONLY, _KIND.POSITIONAL_OR_KEYWORD)


def calls(signatures: Mapping[str, inspect.Signature], key: str) -> Schema:
    """What a body naming its task under ``key`` may give as ``args`` and
    ``kwargs``: for each task of ``signatures``, the calls that bind to it."""
    return {
        "anyOf": [
            {"properties": {key: {"const": name}}, "anyOf": binding(signature)}
            for name, signature in sorted(signatures.items())
        ]
    }


def binding(signature: inspect.Signature) -> list[Schema]:
    """The calls that bind to ``signature``, one schema per number of
    positional arguments given (the last open-ended when it takes ``*args``);
    none that would leave a positional-only parameter without its value."""
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_args = any(p.kind is _KIND.VAR_POSITIONAL for p in params)
    return [
        _given(params, k, open_ended=var_args and k == len(positional))
        for k in range(len(positional) + 1)
        if not any(
            p.kind is _KIND.POSITIONAL_ONLY and p.default is _KIND.empty for p in positional[k:]
        )
    ]


def _given(params: list[inspect.Parameter], k: int, *, open_ended: bool) -> Schema:
    """The call that gives ``k`` positional arguments (``k`` or more when
    ``open_ended``): the parameters after them by keyword, none of those before."""
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_kwargs = any(p.kind is _KIND.VAR_KEYWORD for p in params)
    by_keyword = [p for p in positional[k:] if p.kind is _KIND.POSITIONAL_OR_KEYWORD]
    by_keyword += [p for p in params if p.kind is _KIND.KEYWORD_ONLY]
    taken = [p.name for p in positional[:k] if p.kind is _KIND.POSITIONAL_OR_KEYWORD]
    needed = [p.name for p in by_keyword if p.default is _KIND.empty]
    kwargs: Schema = {
        # null stands for {} where a body takes it so (a schedule's): the body's
        # own schema says whether it may be null.
        "type": ["object", "null"] if not needed else "object",
        "properties": {
            **{p.name: {} for p in by_keyword},
            **{name: {"not": {}} for name in taken},  # given twice: by position and by name
        },
        "required": needed,
        "additionalProperties": var_kwargs,  # **kwargs takes any other name
    }
    args: Schema = {"type": "array" if k else ["array", "null"], "minItems": k}
    if not open_ended:
        args["maxItems"] = k
    # Left out, args is [] and kwargs is {}: a call that needs either must give it.
    required = ["args"] * (k > 0) + ["kwargs"] * bool(needed)
    return {"properties": {"args": args, "kwargs": kwargs}, "required": required}


def example_call(signature: inspect.Signature) -> tuple[list[str], dict[str, str]]:
    """The arguments of the simplest call that binds: a placeholder for each
    parameter without a default, by position where it can be."""
    needed = [p for p in signature.parameters.values() if p.default is _KIND.empty]
    positional = ["…" for p in needed if p.kind in _POSITIONAL]
    return positional, {p.name: "…" for p in needed if p.kind is _KIND.KEYWORD_ONLY}
