"""Reading requests: JSON bodies, query strings and path ids, checked before any
store is asked anything.

Each mistake raises :class:`~tenure.errors.InvalidInput` naming the field as the
client wrote it (``options.delay``, ``created_from``), or :class:`ApiError` when
the answer is not a 422 (a body that is not JSON, too large, or of another media
type). The checks are tenure's own (:mod:`tenure.checks`), so the API refuses
exactly what ``enqueue`` and the store would, only sooner and in the request's
words. Unknown fields and query parameters are refused, not ignored: a typo in
a filter must not silently widen a listing to every task. Which parameters a
route takes is declared in :mod:`tenure.http.surface`, each a :class:`Param`
whose :class:`Kind` pairs a reader of this module with its schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from starlette.datastructures import QueryParams
from starlette.requests import Request

from tenure import serializer
from tenure.checks import INT32, integer, seconds, text
from tenure.errors import InvalidInput
from tenure.http.schemas import Schema
from tenure.store.schedules import check_name
from tenure.store.types import TaskFilter
from tenure.store.validate import MAX_DESCRIPTION_LENGTH, task_id
from tenure.store.validate import meta as validate_meta
from tenure.store.validate import meta_pairs as validate_meta_pairs
from tenure.timetable import Timetable, zone

Reader = Callable[[Any, str], Any]
"""How a parameter is read: its value as sent (a string from a query string or
a path, any JSON value from a body) and its name, to the value the route works
with; ``InvalidInput`` naming the parameter if it is not one."""


@dataclass(frozen=True, slots=True)
class Kind:
    """What a parameter's value is: its schema in the document, and how the
    server reads it (the same limits, said twice in one place)."""

    schema: Schema
    read: Reader
    json: bool = False
    """In a query string, the value is JSON text whose value ``schema``
    describes (an OpenAPI parameter with ``content``), not a scalar."""


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a route, in its query string, its path or its body, as
    :mod:`tenure.http.surface` declares it. One not in the path is optional:
    ``default`` is its value when not given (and the document's default,
    unless ``None``). The route reads the value under ``keyword``, its own
    name unless told otherwise."""

    name: str
    kind: Kind
    description: str = ""
    default: Any = None
    keyword: str = ""
    where: Literal["query", "path", "body"] = "query"

    @property
    def key(self) -> str:
        return self.keyword or self.name


DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
"""Most tasks one page of ``GET /api/tasks`` holds."""

ENVELOPE_BYTES = 64 * 1024
"""What a request body may hold beyond its arguments: name, options, whitespace."""
ESCAPES = 4
"""How many times larger than the stored payload its JSON in a request may be:
a client may escape every character (``\\u00e9``: six bytes for two). The
payload's own limit is the store's, applied once it is decoded."""

ENQUEUE_FIELDS = ("name", "args", "kwargs", "options")

_DIGITS = re.compile(r"[0-9]{1,9}")
_NUMBER = re.compile(r"[0-9]{1,16}(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,3})?")
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[-+][0-9]{2}:[0-9]{2})"
)
_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


class ApiError(Exception):
    """A refusal the API answers with ``status`` (not 422) and the error shape."""

    def __init__(
        self, status: int, field: str | None, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message
        self.headers = dict(headers or {})


def json_type(value: object) -> str:
    """What ``value`` is, in JSON's words (``an array``), for messages."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


# -- bodies ---------------------------------------------------------------------------


async def json_body(request: Request, limit: int) -> object:
    """The request's JSON document: 415 unless it says it is JSON, 413 past
    ``limit`` bytes (counted as they arrive, whatever Content-Length claims),
    400 unless it parses as strict JSON (no NaN, no Infinity)."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise ApiError(415, "Content-Type", "the body must be JSON: Content-Type: application/json")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "body", f"is over the limit of {limit} bytes")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks), parse_constant=_refuse_constant)
    except RecursionError:
        raise ApiError(400, "body", "not valid JSON: nested too deeply") from None
    except ValueError as exc:  # also UnicodeDecodeError: not UTF-8
        raise ApiError(400, "body", f"not valid JSON: {exc}") from None


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


@dataclass(frozen=True, slots=True)
class Enqueue:
    """A checked ``POST /api/tasks`` body; ``options`` are keywords of
    :meth:`~tenure.function.TaskFunction.options`."""

    name: str
    args: list[Any]
    kwargs: dict[str, Any]
    options: dict[str, Any]


def enqueue_request(body: object, options: Sequence[Param]) -> Enqueue:
    """The enqueue a body asks for, its ``options`` as declared;
    ``InvalidInput`` naming the first wrong field."""
    fields = _object(body, "body", ENQUEUE_FIELDS)
    if "name" not in fields:
        raise InvalidInput("name", "is required: the task's registered name")
    name = text(fields["name"], "name")
    args = array(fields.get("args", []), "args")
    kwargs = json_object(fields.get("kwargs", {}), "kwargs")
    # What the store would refuse to keep (a NUL, a lone surrogate), named here.
    serializer.dumps(args, "args")
    serializer.dumps(kwargs, "kwargs")
    return Enqueue(name, args, kwargs, enqueue_options(fields, options))


TRACEPARENT = re.compile(
    r"(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}"
)
"""A W3C ``traceparent`` (Trace Context, level 1): version, trace id, parent id
and flags, the ids not all zeros."""
MAX_TRACESTATE = 512
"""Characters of ``tracestate`` passed on at most (the W3C's advice to carry)."""


def trace_context(headers: Mapping[str, str]) -> dict[str, str]:
    """The W3C trace context of a request, as a task's headers: ``traceparent``
    if it is well formed (else nothing, as the specification says to ignore a
    bad one), with ``tracestate`` if it comes with one and is not too long."""
    parent = headers.get("traceparent", "").strip().lower()
    if not TRACEPARENT.fullmatch(parent):
        return {}
    found = {"traceparent": parent}
    state = headers.get("tracestate", "").strip()
    if state and len(state) <= MAX_TRACESTATE and "\x00" not in state:
        found["tracestate"] = state
    return found


def enqueue_options(fields: Mapping[str, Any], declared: Sequence[Param]) -> dict[str, Any]:
    """The ``options`` object as ``TaskFunction.options`` keywords, each read as
    declared, in declaration order; ``null`` is the same as leaving one out."""
    given = _object(fields.get("options", {}), "options", tuple(p.name for p in declared))
    return {
        option.key: option.kind.read(given[option.name], f"options.{option.name}")
        for option in declared
        if given.get(option.name) is not None
    }


def delay(value: object, field: str) -> float:
    """Seconds from now, zero included."""
    return seconds(value, field, allow_zero=True)


def expires(value: object, field: str) -> float:
    """Seconds after enqueue by which a task must start: more than zero."""
    return seconds(value, field)


def most(value: object, field: str) -> int:
    """How many at most: one or more, ``3.0`` read as ``3``."""
    whole = int(value) if isinstance(value, float) and value.is_integer() else value
    return integer(whole, field, minimum=1)


def concurrency(value: object, field: str) -> int:
    """A worker's concurrency: one or more, within 32 bits, ``3.0`` read as ``3``."""
    whole = int(value) if isinstance(value, float) and value.is_integer() else value
    return integer(whole, field, minimum=1, bounds=INT32)


def priority(value: object, field: str) -> int:
    """A 32-bit integer, ``3.0`` read as ``3``: JSON has one number type, and
    JSON Schema calls 3.0 an integer."""
    whole = int(value) if isinstance(value, float) and value.is_integer() else value
    return integer(whole, field, bounds=INT32)


def description(value: object, field: str) -> str:
    return text(value, field, max_length=MAX_DESCRIPTION_LENGTH)


def new_id(value: object, field: str) -> str:
    """The id a client chooses for a task: one segment of a URL, as the store
    takes it (:func:`tenure.store.validate.task_id`)."""
    return task_id(value, field)


def body_fields(body: object, declared: Sequence[Param]) -> dict[str, Any]:
    """A body's fields by keyword, each read as ``declared``; an unknown field
    is refused, and ``null`` is the same as leaving one out."""
    given = _object(body, "body", tuple(param.name for param in declared))
    return {
        param.key: param.kind.read(given[param.name], param.name)
        for param in declared
        if given.get(param.name) is not None
    }


def fields_of(declared: Sequence[Param]) -> Reader:
    """A reader of a nested object whose fields are ``declared``."""

    def read(value: object, field: str) -> dict[str, Any]:
        given = _object(value, field, tuple(param.name for param in declared))
        return {
            param.key: param.kind.read(given[param.name], f"{field}.{param.name}")
            for param in declared
            if given.get(param.name) is not None
        }

    return read


def id_list(most: int) -> Reader:
    """A reader of at most ``most`` whole task ids, each once, in their order."""

    def read(value: object, field: str) -> list[str]:
        ids = array(value, field)
        if len(ids) > most:
            raise InvalidInput(field, f"at most {most} ids at once, not {len(ids)}")
        return list(dict.fromkeys(text(task_id, f"{field}[{n}]") for n, task_id in enumerate(ids)))

    return read


def meta(value: object, field: str) -> dict[str, str] | None:
    """A task's meta in a body (``options.meta``): an object of text values."""
    return validate_meta(json_object(value, field), field)


def meta_filter(value: object, field: str) -> tuple[tuple[str, str], ...] | None:
    """A meta filter in a body: an object of text values, as the pairs
    :class:`~tenure.store.types.TaskFilter` takes."""
    return validate_meta_pairs(json_object(value, field), field)


MAX_META_QUERY = 16_384
"""Characters of a meta filter in a query string: 32 pairs of 200-character
names and values, with room for escapes."""


def meta_query(value: str, field: str) -> tuple[tuple[str, str], ...] | None:
    """A meta filter in a query string: a JSON object of text values."""
    text(value, field, max_length=MAX_META_QUERY)
    try:
        parsed = json.loads(value, parse_constant=_refuse_constant)
    except ValueError:
        raise InvalidInput(field, 'must be a JSON object, such as {"customer":"c-42"}') from None
    return validate_meta_pairs(json_object(parsed, field), field)


def every(value: object, field: str) -> float:
    """An interval: at least one second."""
    interval = seconds(value, field)
    if interval < 1:
        raise InvalidInput(field, "an interval must be at least 1 second")
    return interval


def array(value: object, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidInput(field, f"must be an array, not {json_type(value)}")
    return value


def json_object(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(field, f"must be an object, not {json_type(value)}")
    return value


def boolean(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(field, f"must be true or false, not {json_type(value)}")
    return value


def schedule_name(value: object, field: str) -> str:
    return check_name(value, field)


def cron(value: object, field: str) -> str:
    """A cron expression a schedule can keep (five or six fields, or a macro,
    naming a date that comes)."""
    expression = text(value, field)
    try:
        Timetable(expression)
    except InvalidInput as refused:
        raise InvalidInput(field, refused.message) from None
    return expression


def time_zone(value: object, field: str) -> str:
    """An IANA time zone name this machine knows."""
    try:
        zone(text(value, field))
    except InvalidInput as refused:
        raise InvalidInput(field, refused.message) from None
    return str(value)


def _object(value: object, field: str, known: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(field, f"must be a JSON object, not {json_type(value)}")
    for key in value:
        if key not in known:
            where = key if field == "body" else f"{field}.{key}"
            raise InvalidInput(where, f"unknown field; expected one of {', '.join(known)}")
    return value


# -- query strings and paths -------------------------------------------------------------
# Each reader takes a value as the query string or the path gave it and the
# parameter's name; :mod:`tenure.http.surface` pairs each with its schema.


def query(params: QueryParams, known: tuple[str, ...] = ()) -> dict[str, str]:
    """The query's parameters, each known and given once."""
    for key in params:
        if key not in known:
            expected = f"expected one of {', '.join(known)}" if known else "this route takes none"
            raise InvalidInput(key, f"unknown query parameter; {expected}")
        if len(params.getlist(key)) > 1:
            raise InvalidInput(key, "is given more than once")
    return dict(params)


def read_parameters(
    declared: Sequence[Param], query_params: QueryParams, path: Mapping[str, str]
) -> dict[str, Any]:
    """The values of the ``declared`` parameters by keyword, each read and
    checked (the query's first, in declaration order); an unknown query
    parameter, or one given twice, is refused before any is read."""
    in_query = [param for param in declared if param.where == "query"]
    given = query(query_params, tuple(param.name for param in in_query))
    values: dict[str, Any] = {}
    for param in [*in_query, *(param for param in declared if param.where == "path")]:
        raw = (given if param.where == "query" else path).get(param.name)
        values[param.key] = param.default if raw is None else param.kind.read(raw, param.name)
    return values


@dataclass(frozen=True, slots=True)
class Listing:
    """A checked ``GET /api/tasks``: which tasks, from where, how many, which way."""

    filters: TaskFilter
    cursor: str | None
    limit: int
    newest_first: bool


PAGING = ("cursor", "limit", "order")
"""The listing's parameters that are not filters: every other one is a keyword
of :class:`~tenure.store.types.TaskFilter`."""


def listing(values: Mapping[str, Any]) -> Listing:
    """The listing its parameters' values ask for."""
    filters = TaskFilter(**{name: value for name, value in values.items() if name not in PAGING})
    return Listing(filters, values["cursor"], values["limit"], values["order"] == "newest")


def count(most: int) -> Reader:
    """A reader of a whole number from 1 to ``most``."""

    def read(value: str, field: str) -> int:
        if not _DIGITS.fullmatch(value):
            raise InvalidInput(field, f"must be a whole number from 1 to {most}, not {value!r}")
        number = int(value)
        if not 1 <= number <= most:
            raise InvalidInput(field, f"must be from 1 to {most}, not {number}")
        return number

    return read


def choice(*choices: str) -> Reader:
    """A reader of one of ``choices``."""

    def read(value: str, field: str) -> str:
        if value not in choices:
            listed = " or ".join(filter(None, (", ".join(choices[:-1]), choices[-1])))
            raise InvalidInput(field, f"must be {listed}, not {value!r}")
        return value

    return read


def moment(value: str, field: str) -> datetime:
    """An RFC 3339 time with its offset (``2026-11-23T08:00:00Z``), in UTC."""
    example = "e.g. 2026-11-23T08:00:00Z"
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise InvalidInput(field, f"must be an RFC 3339 time with an offset ({example})")
    try:
        return datetime.fromisoformat(value.upper()).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(field, f"not a valid time: {exc} ({example})") from None


def span(value: str, field: str) -> float:
    """A positive number of seconds (``GET /api/stats?window=``)."""
    if not _NUMBER.fullmatch(value):
        raise InvalidInput(field, f"must be a number of seconds, not {value!r}")
    return seconds(float(value), field)
