"""A faster ``__init__`` for the frozen dataclasses made on every task's path.

A frozen dataclass cannot assign its fields, so the ``__init__`` that
``dataclasses`` writes sets each one through ``object.__setattr__``, looking
that up anew for every field. On CPython 3.11 this makes a frozen ``Task`` (28
fields) cost several times what the same class unfrozen costs to construct, and
tenure makes one for every task an enqueue returns and every task a worker
reserves, thousands a second. :func:`quick_init` gives such a class an
``__init__`` with the very same parameters, defaults and ``__post_init__``
call, which sets each field through its slot's own setter, bound once (a
class without slots: through ``object.__setattr__``, bound once). Instances
are the same in every way: still frozen, equal, hashed and copied as before.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, TypeVar

C = TypeVar("C", bound=type)


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""


def quick_init(cls: C) -> C:
    """Replace the ``__init__`` of ``cls``, a frozen dataclass, by a faster one
    with the same signature. Fields that ``__init__`` leaves out, keyword-only
    fields, ``InitVar`` pseudo-fields and fields named as the new
    ``__init__``'s own globals (``_set``, ``_set_x`` …) are refused: the copy
    would differ."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    namespace: dict[str, Any] = {
        "__name__": cls.__module__,  # the new __init__'s module, as the one it replaces
        "_set": object.__setattr__,
        "_FACTORY": _Factory,
    }
    fields = dataclasses.fields(cls)
    original = vars(cls)["__init__"]
    taken = [(p.name, p.kind) for p in inspect.signature(original).parameters.values()][1:]
    if taken != [(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in fields]:
        # A field left out of __init__, keyword-only, or an InitVar beside them.
        raise TypeError(f"{cls.__name__}: its __init__ takes other parameters than its fields")
    arguments, body = _parameters_and_body(cls, fields, namespace)
    if clash := sorted({f.name for f in fields} & namespace.keys()):
        # A field named as one of the new __init__'s globals would hide it.
        raise TypeError(f"{cls.__name__}: fields named as quick_init's own names: {clash}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(arguments)}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)  # noqa: S102 - made above from the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = original.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls


def _parameters_and_body(
    cls: type, fields: tuple[dataclasses.Field[Any], ...], namespace: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """The new ``__init__``'s parameters and the lines that set each field,
    the defaults, factories and setters they name put in ``namespace``."""
    arguments, body = [], []
    for field in fields:
        name = field.name
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            arguments.append(f"{name}=_default_{name}")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = field.default_factory
            arguments.append(f"{name}=_FACTORY")
            body.append(f"    if {name} is _FACTORY:\n        {name} = _factory_{name}()")
        else:
            arguments.append(name)
        slot = vars(cls).get(name)
        if isinstance(slot, types.MemberDescriptorType):  # 60 ns a field instead of 100
            namespace[f"_set_{name}"] = slot.__set__
            body.append(f"    _set_{name}(self, {name})")
        else:
            body.append(f"    _set(self, {name!r}, {name})")
    return arguments, body
