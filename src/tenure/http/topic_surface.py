"""The HTTP API's routes about the store as a whole: the topics' settings
(pause, resume, limits, rates, ageing) and the live workers (listed, scaled).
Declared as :mod:`tenure.http.surface` declares the tasks' routes, in its
table's terms.
"""

from __future__ import annotations

from tenure.checks import INT32, MAX_SECONDS
from tenure.errors import InvalidInput
from tenure.http import inputs
from tenure.http.inputs import Kind, Param
from tenure.http.schemas import TIME, Schema, nullable, obj, ref
from tenure.http.surface import MOST, STORE, TEXT, Operation
from tenure.store.flowcontrol import MIN_AGEING_STEP

TOPIC = Param("topic", TEXT, "the topic", where="body")
WORKER = Param("worker", TEXT, "the worker's id, as GET /api/workers lists it", where="body")
CONCURRENCY = Param(
    "concurrency",
    Kind({"type": "integer", "minimum": 1, "maximum": INT32[1]}, inputs.concurrency),
    "how many tasks it runs at once",
    where="body",
)
MAX_RUNNING = Param(
    "max_running", MOST, "how many of its tasks may run at once; null lifts the limit", where="body"
)
MAX_STARTS = Param(
    "max_starts", MOST, "how many of its tasks may start within the span; null lifts the rate",
    where="body",
)  # fmt: skip
STEP = Kind({"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}, inputs.expires)
PER_SECONDS = Param("per_seconds", STEP, "the span, in seconds (60 if left out)", where="body")


def ageing_step(value: object, field: str) -> float:
    """Seconds a step of ageing: at least :data:`MIN_AGEING_STEP`."""
    step = inputs.expires(value, field)
    if step < MIN_AGEING_STEP:
        raise InvalidInput(field, f"must be at least {MIN_AGEING_STEP} s")
    return step


AGEING_STEP = Kind(
    {"type": "number", "minimum": MIN_AGEING_STEP, "maximum": MAX_SECONDS}, ageing_step
)
EVERY_SECONDS = Param(
    "every_seconds", AGEING_STEP, "seconds waited a step of priority; null: priority alone",
    where="body",
)  # fmt: skip
RAISED = Kind({"type": "integer", "minimum": 1, "maximum": INT32[1]}, inputs.concurrency)
MOST_STEPS = Param("most", RAISED, "steps at most (10 if left out)", where="body")


def _topic_setting(
    name: str, summary: str, handler: str, fields: tuple[Param, ...], item: str
) -> tuple[Operation, Operation]:
    """The routes of a topic's setting: the list of them, and a change of one."""
    plural = f"{name}s" if name != "ageing" else "ageing"
    body = {TOPIC.name: TOPIC.kind.schema}
    body.update({param.name: nullable(param.kind.schema) for param in fields})
    return (
        Operation(
            "GET",
            f"/api/topics/{plural}",
            id=f"listTopic{plural.title()}",
            summary=f"The topics' {plural}: {summary}",
            handler=f"list_topic_{plural}",
            answer=f"The topics' {plural}, by topic",
            returns=obj({plural: {"type": "array", "items": ref(f"Topic{item}")}}),
            refusals=STORE,
        ),
        Operation(
            "POST",
            f"/api/topics/{name}",
            id=f"{handler}Topic",
            summary=f"Set a topic's {name} ({summary}), across every worker, from the next "
            f"reservation; null in {fields[0].name} lifts it",
            handler=f"{name}_topic",
            body=obj(body, required=("topic", fields[0].name)),
            answer=f"The topic's {name} now (every field null once lifted)",
            returns=obj({**body, "set_at": nullable(TIME)}),
            refusals=("400", "413", "415", *STORE),
        ),
    )


def _topic_change(action: str, summary: str, returns: Schema) -> Operation:
    return Operation(
        "POST",
        f"/api/topics/{action}",
        id=f"{action}Topic",
        summary=summary,
        handler=f"{action}_topic",
        body=obj({TOPIC.name: TOPIC.kind.schema}),
        answer="What was changed",
        returns=returns,
        refusals=("400", "413", "415", *STORE),
    )


TOPICS = (
    Operation(
        "GET",
        "/api/topics/paused",
        id="listPausedTopics",
        summary="The paused topics: no worker starts their tasks",
        handler="list_paused_topics",
        answer="The paused topics, by name",
        returns=obj({"paused": {"type": "array", "items": ref("PausedTopic")}}),
        refusals=STORE,
    ),
    _topic_change(
        "pause",
        "Stop every worker starting a topic's tasks, from its next reservation "
        "(running ones finish; pausing a paused topic keeps its first time)",
        ref("PausedTopic"),
    ),
    _topic_change(
        "resume",
        "Let workers start a paused topic's tasks again",
        obj({"topic": {"type": "string"}, "resumed": {"type": "boolean"}}),
    ),
    *_topic_setting(
        "limit", "at most so many of a topic's tasks run at once", "limit", (MAX_RUNNING,),
        "Limit",
    ),
    *_topic_setting(
        "rate", "at most so many of a topic's tasks start within any span", "rate",
        (MAX_STARTS, PER_SECONDS), "Rate",
    ),
    *_topic_setting(
        "ageing", "a topic's waiting tasks taken as if their priority rose a step a span",
        "age", (EVERY_SECONDS, MOST_STEPS), "Ageing",
    ),
)  # fmt: skip
"""The topics' routes: pause, resume, which are paused, their limits, rates
and ageing (a topic is named in the body: a topic may hold a ``/``, which no
path segment can)."""


WORKERS = (
    Operation(
        "GET",
        "/api/workers",
        id="listWorkers",
        summary="The live workers",
        handler="list_workers",
        answer="The live workers",
        returns=ref("Workers"),
        refusals=STORE,
    ),
    Operation(
        "POST",
        "/api/workers/scale",
        id="scaleWorker",
        summary="Change how many tasks a running worker runs at once, from its next heartbeat",
        handler="scale_worker",
        body=obj({WORKER.name: WORKER.kind.schema, CONCURRENCY.name: CONCURRENCY.kind.schema}),
        answer="The worker's row, with the concurrency it is to take",
        returns=ref("Worker"),
        refusals=("400", "404", "413", "415", *STORE),
    ),
)
"""The live workers' routes: the list, and a change of one's concurrency."""
