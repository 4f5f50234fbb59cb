"""What schemathesis is told about the HTTP API beyond its document, when
``st run --checks all`` fuzzes a live ``tenure serve``
(``SCHEMATHESIS_HOOKS=tests.integration.api_fuzzing``).

What no schema states, each kept as narrow as it can be:

- how to draw a value of the document's ``cron`` format (the fields' ranges,
  steps and lists, and a date that comes): valid expressions, so that a body
  schemathesis calls valid is one (its coverage phase draws a format's values
  from the length bounds alone: a refusal of such a value that is not a cron
  expression is set aside, never that of one that is);
- that a listing's ``cursor`` is one the server answered, sealed and bound to
  its filters: a made-up one is refused, and only the refusal that names the
  cursor is set aside, never another;
- which worker is alive to be scaled (one the test registers).
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import strategies as st
from schemathesis.openapi.checks import RejectedPositiveData

from tenure.errors import InvalidInput
from tenure.timetable import MACROS, Timetable


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    """One cron field over ``low..high``: ``*``, a value, a range, a step or a list."""
    value = st.integers(low, high)
    ranged = st.tuples(value, value).map(lambda pair: "{}-{}".format(*sorted(pair)))
    stepped = st.integers(1, high - low + 1).map(lambda step: f"*/{step}")
    single = st.one_of(st.just("*"), value.map(str), ranged, stepped)
    listed = st.lists(value, min_size=2, max_size=3, unique=True).map(
        lambda values: ",".join(map(str, sorted(values)))
    )
    return st.one_of(single, listed)


CRON = st.one_of(
    st.sampled_from(sorted(MACROS)),
    # Days of the month up to 28: every month has them, so every line names a date that comes.
    st.tuples(_field(0, 59), _field(0, 23), _field(1, 28), _field(1, 12), _field(0, 6)).map(
        " ".join
    ),
)
schemathesis.openapi.format("cron", CRON)


@schemathesis.hook
def filter_failure(ctx: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but the refusal of a made-up cursor, or of a cron
    expression that is not one (the coverage phase draws a format's values
    from its length alone)."""
    if not isinstance(failure, RejectedPositiveData) or response.status_code != 422:
        return True
    field = response.json().get("error", {}).get("field")
    if field == "cursor":
        return "cursor" not in (case.query or {})
    if field == "cron" and isinstance(case.body, dict):
        return _is_cron(case.body.get("cron"))
    return True


def _is_cron(value: object) -> bool:
    try:
        Timetable(value)  # type: ignore[arg-type]
    except (InvalidInput, TypeError):
        return False
    return True


FUZZED_WORKER = "fuzzed-worker"
"""A worker the test registers, so that scaling one is tried on a live worker."""


@schemathesis.hook
def map_body(ctx: Any, body: Any) -> Any:
    """Name the registered worker in a scaling, wherever a valid name was
    drawn: a made-up name finds no worker (404), which says nothing of the rest."""
    operation = getattr(ctx, "operation", None)
    if getattr(operation, "path", None) != "/api/workers/scale" or not isinstance(body, dict):
        return body
    worker = body.get("worker")
    if isinstance(worker, str) and 0 < len(worker) <= 200 and "\x00" not in worker:
        return {**body, "worker": FUZZED_WORKER}
    return body
