"""JSON Schema for the OpenAPI document: the few building blocks it is made of,
and the schemas of the API's answers derived from the dataclasses they are
serialised from (:mod:`tenure.shapes`).

Why derived here rather than by a schema library (msgspec, pydantic): the
answers are tenure's own dataclasses, turned into JSON by hand-written functions
(``task_json`` …) that the command line's ``--json`` shares. A library would
need the shapes rewritten as its own models, or would describe the dataclasses
its way and still need the same refinements (bounds, descriptions, renamed
fields) written beside them. The dataclasses' fields and type hints already say
which properties an answer has, their types and which may be null: reading them
takes :func:`derive` and a dozen type rules, and a field added to ``Task`` is in
the document at once. What type hints cannot say (that ``attempts`` is never
negative, what ``data`` holds) is a refinement named by field, and naming a
field the dataclass does not have is an error, so refinements cannot drift
either.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from tenure.checks import MAX_NAME_LENGTH

Schema = dict[str, Any]

NO_NUL = "^[^\\u0000]*$"

NULL: Schema = {"type": "null"}
_HOLDS_NUL: Schema = {"$ref": "#/components/schemas/HoldsNul"}
HOLDS_NUL: Schema = {
    "description": "JSON that holds a NUL somewhere, in a text or a name (no store keeps it)",
    "not": {
        "not": {
            "anyOf": [
                {"type": "string", "pattern": "\\u0000"},
                {"type": "array", "contains": _HOLDS_NUL},
                {"type": "object", "not": {"propertyNames": {"pattern": NO_NUL}}},
                {"type": "object", "not": {"additionalProperties": {"not": _HOLDS_NUL}}},
            ]
        }
    },
}
"""What a task's arguments may not be, at any depth: the document's ``HoldsNul``
(said as what is refused, so that the arguments themselves stay plain arrays
and objects to a client generator)."""
ARGUMENTS: Schema = {"type": "array", "items": {}, "not": _HOLDS_NUL}
KEYWORD_ARGUMENTS: Schema = {"type": "object", "additionalProperties": {}, "not": _HOLDS_NUL}
TIME: Schema = {"type": "string", "format": "date-time"}
INTEGER: Schema = {"type": "integer"}
COUNT: Schema = {"type": "integer", "minimum": 0}
_SCALARS: dict[object, Schema] = {
    str: {"type": "string"},
    int: INTEGER,
    float: {"type": "number"},
    bool: {"type": "boolean"},
    datetime: TIME,
    Any: {},
}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    """``schema`` or ``null`` (listed among its values, if it lists them)."""
    if "enum" in schema:
        listed = {**schema, "enum": [*schema["enum"], None]}
        return {**listed, "type": [schema["type"], "null"]} if "type" in schema else listed
    if "type" in schema:
        return {**schema, "type": [schema["type"], "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def text(max_length: int = MAX_NAME_LENGTH, pattern: str = NO_NUL) -> Schema:
    """A non-empty string without NUL, as :func:`tenure.checks.text` accepts."""
    return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": pattern}


def only(*constraints: Schema) -> Schema:
    """``constraints``, that a value must meet, said as a double negation: the
    same to a validator, and left alone by client generators
    (openapi-python-client) that read a schema's ``anyOf`` or ``oneOf`` as
    alternative types to build models of, not as rules on one object."""
    said = constraints[0] if len(constraints) == 1 else {"allOf": list(constraints)}
    return {"not": {"not": said}}


def given(name: str, schema: Schema, **others: Schema) -> Schema:
    """An object that gives ``name`` as ``schema`` (and, if it gives them,
    the ``others`` as theirs): ``given("every", NUMBER, tz=NULL)``."""
    return {"properties": {name: schema, **others}, "required": [name]}


def obj(properties: dict[str, Schema], required: tuple[str, ...] | None = None) -> Schema:
    """A closed object; every property required unless told otherwise."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties if required is None else required),
        "additionalProperties": False,
    }


def refined(schema: Schema, refinement: Mapping[str, Any]) -> Schema:
    """``schema`` with ``refinement`` added, nested objects merged key by key
    (``{"additionalProperties": {"minimum": 0}}`` bounds the values of a map)."""
    merged = dict(schema)
    for key, value in refinement.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = refined(merged[key], value)
        else:
            merged[key] = value
    return merged


def derive(
    cls: type,
    named: Mapping[type, str],
    refine: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    rename: Mapping[str, str] | None = None,
    omit: tuple[str, ...] = (),
    add: Mapping[str, Schema] | None = None,
) -> Schema:
    """The closed object a dataclass is serialised as: one required property
    per field, in field order, typed by its hint. ``named`` maps the dataclasses
    that are schemas of their own to their names (a ``$ref`` to them); any other
    dataclass is described in place. ``refine`` adds to a field's schema what
    its hint cannot say; ``rename``, ``omit`` and ``add`` say how the JSON
    differs from the fields (a field written under another name, left out, a
    property computed)."""
    hints = typing.get_type_hints(cls)
    names = [field.name for field in dataclasses.fields(cls)]
    rename, refine = rename or {}, refine or {}
    unknown = sorted((set(refine) | set(rename) | set(omit)) - set(names))
    if unknown:
        raise TypeError(f"{cls.__name__} has no fields {', '.join(unknown)}")
    properties = {
        rename.get(name, name): refined(schema_of(hints[name], named), refine.get(name, {}))
        for name in names
        if name not in omit
    }
    return obj({**properties, **(add or {})})


def schema_of(hint: object, named: Mapping[type, str]) -> Schema:
    """The schema of a value of type ``hint``, as :mod:`tenure.shapes` writes it
    in JSON: an enum by its values, times in ISO 8601, sets and tuples as arrays,
    maps as objects (an enum-keyed one with its keys named)."""
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if isinstance(hint, type):
        return _class(hint, named)
    return _generic(hint, named)


def _class(hint: type, named: Mapping[type, str]) -> Schema:
    if hint in named:
        return ref(named[hint])
    if issubclass(hint, Enum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if dataclasses.is_dataclass(hint):
        return derive(hint, named)
    raise TypeError(f"no JSON schema for {hint!r}")


def _generic(hint: object, named: Mapping[type, str]) -> Schema:
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union) and type(None) in arguments:
        (other,) = (argument for argument in arguments if argument is not type(None))
        return nullable(schema_of(other, named))
    if origin in (list, tuple, set, frozenset):
        return {"type": "array", "items": schema_of(arguments[0], named)}
    if origin is dict:
        keys, values = (schema_of(argument, named) for argument in arguments)
        names = {} if keys == {"type": "string"} else {"propertyNames": keys}
        return {"type": "object", **names, "additionalProperties": values}
    raise TypeError(f"no JSON schema for {hint!r}")
