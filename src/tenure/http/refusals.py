"""What each of tenure's errors is over HTTP, in one table, for the API and the
dashboard alike: the status, the field the API's JSON names, the headers, and
one message, said to a program as it is (:func:`error_json`, the one shape of
every refusal and failure of the API) and to a person as a sentence. What the
API answers on success is :mod:`tenure.shapes`, shared with the command line's
``--json``.

Errors not in the table are failures, not refusals: a 500 whose details go to
the log. Refusals of HTTP itself (a body too large, not JSON, a route that
does not exist) are the API's own (:class:`~tenure.http.inputs.ApiError`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tenure.errors import (
    AmbiguousId,
    DuplicateTask,
    InvalidInput,
    InvalidTransition,
    ScheduleConflict,
    ScheduleExists,
    ScheduleNotFound,
    StoreUnavailable,
    TaskNotFound,
    TenureError,
    UniqueConflict,
)

RETRY_AFTER = "5"
"""Seconds a client is asked to wait after a 503, while the store is out of reach."""

UNREACHABLE = "the store cannot be reached now; try again shortly"

TABLE: tuple[tuple[type[TenureError], int, str | None], ...] = (
    (AmbiguousId, 409, "id"),  # before InvalidInput, of which it is one
    (InvalidInput, 422, None),  # None: the field the error names
    (TaskNotFound, 404, "id"),
    (DuplicateTask, 409, "options.id"),
    (ScheduleNotFound, 404, "name"),
    (ScheduleExists, 409, "name"),
    (ScheduleConflict, 409, None),  # None: the field it names
    (InvalidTransition, 409, "status"),
    (UniqueConflict, 409, None),
    (StoreUnavailable, 503, None),
)
"""Each refused error's status and the field it names, the first that matches
winning: a kind is listed before the kinds it derives from."""


def error_json(field: str | None, message: str) -> dict[str, Any]:
    """Every refusal and failure: what was wrong (a request field, a header, or
    ``None`` when nothing the client sent was) and why, in words."""
    return {"error": {"field": field, "message": message}}


@dataclasses.dataclass(frozen=True)
class Refusal:
    """How an HTTP answer refuses a request, whoever asked."""

    status: int
    field: str | None
    message: str
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def sentence(self) -> str:
        """The message for a person: the field it names first, where the input
        was wrong, as one sentence."""
        text = f"{self.field}: {self.message}" if self.status == 422 else self.message
        return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def refusal(exc: TenureError) -> Refusal | None:
    """The answer to ``exc``; ``None`` if it is a failure, not a refusal."""
    for kind, status, named in TABLE:
        if not isinstance(exc, kind):
            continue
        if isinstance(exc, StoreUnavailable):  # what failed stays in the server's log
            return Refusal(status, None, UNREACHABLE, {"Retry-After": RETRY_AFTER})
        if isinstance(exc, InvalidInput | ScheduleConflict):
            return Refusal(status, named or exc.field, exc.message)
        return Refusal(status, named, str(exc))
    return None
