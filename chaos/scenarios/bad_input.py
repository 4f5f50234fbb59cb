"""The bad-input scenario (both stores, see :mod:`chaos.scenarios`): while
producers enqueue and workers drain healthy tasks, the harness throws bad input
at enqueue and at the store's public reads and writes (leases no holder has
included), and topics that look like SQL or
wildcards at the filters.

Every bad call must raise a :class:`~tenure.errors.TenureError` (anything else,
or no error, is a problem) and change nothing: bad enqueues aim at a topic of
their own that nothing else writes and no worker serves (:data:`QUIET`), whose
tasks are compared before and after each call. Topics such as ``'; DROP TABLE
tasks;--``, ``%``, ``_`` and emoji are valid: a task is made in each, and a
filter on each must find exactly that task (wildcards match literally), after
which they are cancelled so the queue can drain. The workers must go on
draining meanwhile (the checker's I1 and P).

Each call is written to the harness's fault log (``bad-input``: what, how it
ended, the error type); :func:`figures` turns them into the line's figures.
A run with any problem ends with :class:`~chaos.ChaosError` naming them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import tenure
from chaos import ChaosError
from chaos.harness import Harness
from chaos.journal import read_folder
from chaos.probe import Probe, declare
from chaos.scenarios.base import Context, Plan, Scenario, tasks
from chaos.verdict import Figures
from tenure.clock import utcnow
from tenure.errors import TenureError
from tenure.store import NewTask, Store, TaskFilter
from tenure.task import Lease, Status

__all__ = [
    "BAD_INPUT",
    "HUGE",
    "LITERAL_TOPICS",
    "QUIET",
    "SCENARIO",
    "Bad",
    "attempt",
    "bad_calls",
    "bad_input",
    "figures",
    "literal_topics",
    "quiet_state",
]

QUIET = "chaos-quiet"
"""The topic bad enqueues aim at: no producer writes there, no worker serves it."""
LITERAL_TOPICS = (
    "'; DROP TABLE tasks;--",
    "%",
    "_",
    "a%",
    "_b",
    "100%_sure",
    "\\",
    "🦀 topic 🚀",
)
"""Valid topics that a careless store would read as SQL or as wildcards."""
MB = 1 << 20


Call = Callable[[Any, Any], object]
"""A bad call, given the store and the probe (typed loosely: they are misused)."""


@dataclass(frozen=True, slots=True)
class Bad:
    """One bad call: ``what`` it is, and the call (given the store and the probe)."""

    what: str
    call: Call


def _circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _deep(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


PAYLOADS: dict[str, Callable[[], object]] = {
    "an object": object,
    "a set": lambda: {1, 2},
    "bytes": lambda: b"\x00\xff",
    "NaN": lambda: math.nan,
    "infinity": lambda: -math.inf,
    "a NUL character": lambda: "a\u0000b",
    "a NUL in a key": lambda: {"k\x00": 1},
    "a lone surrogate": lambda: "\ud800",
    "a circular list": _circular,
    "100,000 nested lists": lambda: _deep(100_000),
    "a datetime": lambda: datetime(2020, 1, 1),
}
"""Payloads that are not JSON a store can keep."""


def _store(method: str, *args: object, **kwargs: object) -> Call:
    """A call of the store's ``method`` with these arguments."""

    def call(store: Any, _: Any) -> object:
        return getattr(store, method)(*args, **kwargs)

    return call


def _enqueue(
    make: Callable[[], object] = float, options: dict[str, object] | None = None, **more: object
) -> Call:
    """An enqueue of the probe in the quiet topic, with ``make()`` as its first
    argument, these ``options`` and more keyword arguments."""

    def call(_: Any, probe: Any) -> object:
        return probe.options(**{"topic": QUIET, **(options or {})}).enqueue(make(), 0, **more)

    return call


def _many(_: Any, probe: Any) -> object:
    return probe.options(topic=QUIET).enqueue_many([(0.0, 0), (math.nan, 0)])


def _unknown_name(_: Any, probe: Any) -> object:
    return probe.app.enqueue("chaos.no-such-task")


def _unknown_option(_: Any, probe: Any) -> object:
    return probe.options(nope=1)


def _payload_calls(huge: tuple[int, ...]) -> list[Bad]:
    made = [Bad(f"payload: {name}", _enqueue(make)) for name, make in PAYLOADS.items()]
    made += [
        Bad(f"payload: {size // MB} MB", _enqueue(partial(str.__mul__, "x", size))) for size in huge
    ]
    made.append(Bad("enqueue_many: a good call beside a bad one", _many))
    made.append(Bad("an unknown argument", _enqueue(nope=1)))
    made.append(Bad("an unknown task name", _unknown_name))
    return made


OPTIONS: dict[str, list[object]] = {
    "priority": [2**31, -(2**31) - 1, "high", 1.5, True],
    "delay": [-1.0, math.nan, math.inf, 1e12, "soon"],
    "run_at": ["tomorrow", 1.5],
    "id": ["", "\x00", "x" * 300, 5],
    "group_id": ["", "a\x00b", "g" * 201],
    "sub_topic": ["", "\x00"],
    "description": ["d" * 5000, "a\x00b"],
    "topic": ["", "\x00", "t" * 201, 7],
}
"""Enqueue options, each value of which must be refused."""


def _option_calls() -> list[Bad]:
    made = [
        Bad(f"option {name}={value!r:.20}", _enqueue(options={name: value}))
        for name, values in OPTIONS.items()
        for value in values
    ]
    both = {"delay": 1.0, "run_at": utcnow()}
    made.append(Bad("run_at and delay both", _enqueue(options=both)))
    made.append(Bad("an unknown option", _unknown_option))
    return made


CURSORS = ["garbage", "", "0", "\x00", "…", "A" * 10_000, "1.2", "-1", "\u0661\u0662\u0663"]
EVENT_CURSORS = ["1", "1.2.3", "-1.2", "a.b", "\u0661.\u0662", "9" * 30 + ".1", "", "1.", " 1.2"]
IDS: list[object] = ["", "\x00", "x" * 1000, None, 5, b"id"]
LIMITS: list[object] = [0, -1, 10**9, 1.5, True, "10"]
FILTERS: list[dict[str, Any]] = [
    {"status": "nope"},
    {"created_from": "yesterday"},
    {"topic": ""},
    {"topic": "a\x00"},
    {"text": "x" * 3000},
    {"group_id": 5},
]


def _read_calls() -> list[Bad]:
    made = [Bad(f"task_list cursor {c!r:.20}", _store("task_list", cursor=c)) for c in CURSORS]
    made += [Bad(f"leased cursor {c!r:.20}", _store("task_list_leased", cursor=c)) for c in CURSORS]
    made += [
        Bad(f"event_list after {c!r:.20}", _store("event_list", after=c)) for c in EVENT_CURSORS
    ]
    for method in ("task_get", "task_cancel", "task_retry"):
        made += [Bad(f"{method} {i!r:.20}", _store(method, i)) for i in IDS]
    made += [Bad(f"{m} no-such-id", _store(m, "no-such-id")) for m in ("task_cancel", "task_retry")]
    for method in ("task_list", "event_list"):
        made += [Bad(f"{method} limit {n!r}", _store(method, limit=n)) for n in LIMITS]
    made += [Bad(f"task_list scan {n!r}", _store("task_list", scan=n)) for n in (0, -1, 10**12)]
    made += [Bad(f"TaskFilter {f!r:.30}", _store("task_list", TaskFilter(**f))) for f in FILTERS]
    made += [
        Bad("task_list_leased topics []", _store("task_list_leased", topics=[])),
        Bad("task_list_leased topics NUL", _store("task_list_leased", topics=["\x00"])),
        Bad("leader_acquire name ''", _store("leader_acquire", "", "o", 1.0)),
        Bad("leader_acquire lease -1", _store("leader_acquire", "n", "o", -1.0)),
        Bad("leader_acquire lease NaN", _store("leader_acquire", "n", "o", math.nan)),
        Bad("worker_prune -1", _store("worker_prune", -1.0)),
    ]
    return made


LEASES: list[object] = [
    Lease("", "o", 1),
    Lease("x", "", 1),
    Lease("x", "o", 0),
    Lease("x\x00", "o", 1),
    Lease("no-such-id", "o", 1),
    "a lease",
]
"""Leases no holder has: malformed, or naming no task."""


def _holder_calls() -> list[Bad]:
    made = []
    for lease in LEASES:
        shown = f"{lease!r:.40}"
        made += [
            Bad(f"lease_extend {shown}", _store("lease_extend", lease, 1.0)),
            Bad(f"task_complete {shown}", _store("task_complete", lease, "result")),
            Bad(f"task_snooze {shown}", _store("task_snooze", lease, 1.0)),
            Bad(f"task_release {shown}", _store("task_release", lease)),
        ]
    sane = Lease("no-such-id", "o", 1)
    made += [Bad(f"lease_extend for {n!r}s", _store("lease_extend", sane, n)) for n in NUMBERS_BAD]
    made += [Bad(f"task_snooze for {n!r}s", _store("task_snooze", sane, n)) for n in NUMBERS_BAD]
    return made


NUMBERS_BAD: list[object] = [-1.0, 0.0, math.nan, math.inf, 1e12, "1"]


def bad_calls(huge: tuple[int, ...] = ()) -> list[Bad]:
    """Every bad call; payloads of ``huge`` bytes too (few: each takes memory)."""
    return [*_payload_calls(huge), *_option_calls(), *_read_calls(), *_holder_calls()]


def quiet_state(store: Store) -> tuple[int, list[tuple[str, Status, int]]]:
    """What bad enqueues could have changed: the quiet topic's tasks."""
    page = store.task_list(TaskFilter(topic=QUIET), limit=1000)
    return len(page.tasks), [(t.id, t.status, t.record_ver) for t in page.tasks]


def attempt(store: Store, probe: Probe, bad: Bad) -> dict[str, Any]:
    """Make the bad call; say how it ended and whether the quiet topic changed."""
    before = quiet_state(store)
    try:
        bad.call(store, probe)
    except TenureError as exc:
        ended, kind = "refused", type(exc).__name__
    except Exception as exc:
        ended, kind = "crash", f"{type(exc).__name__}: {exc}"[:200]
    else:
        ended, kind = "accepted", ""
    changed = quiet_state(store) != before
    return {"what": bad.what, "ended": ended, "error": kind, "changed": changed}


def literal_topics(store: Store) -> list[str]:
    """One task in each of :data:`LITERAL_TOPICS`; each filter must find exactly
    its own task. Returns the problems; the tasks are cancelled after."""
    made = {
        topic: store.task_create(
            NewTask(topic=topic, name="chaos.literal", description=f"[{topic}]")
        )
        for topic in LITERAL_TOPICS
    }
    problems = []
    try:
        for topic, task in made.items():
            found = [t.id for t in store.task_list(TaskFilter(topic=topic), limit=100).tasks]
            counted = store.task_count(TaskFilter(topic=topic))
            if found != [task.id] or counted != 1:
                problems.append(
                    f"topic filter {topic!r} found {len(found)} tasks, counted {counted}"
                )
            described = store.task_list(TaskFilter(text=f"[{topic}]"), limit=100).tasks
            if [t.id for t in described if t.topic in made] != [task.id]:
                problems.append(f"text filter {topic!r} found {[t.topic for t in described]}")
            leased = store.task_list_leased(topics=[topic]).tasks
            if leased:
                problems.append(f"leased filter {topic!r} found {len(leased)} tasks")
    finally:
        for task in made.values():
            store.task_cancel(task.id)
    return problems


def bad_input(harness: Harness, context: Context) -> None:
    plan = context.plan
    harness.produce(plan.workloads)
    app = tenure.App(harness.setup.url)
    try:
        probe = declare(app)
        problems = literal_topics(harness.store)
        for round_ in range(plan.faults):
            huge = HUGE if round_ == 0 else ()
            for bad in bad_calls(huge):
                seen = attempt(harness.store, probe, bad)
                harness.faults.write("bad-input", **seen)
                if seen["ended"] != "refused" or seen["changed"]:
                    problems.append(f"{bad.what}: {seen['ended']} {seen['error']}".strip())
            context.interval()
    finally:
        app.close()
    for problem in problems:
        harness.faults.write("bad-input-problem", problem=problem)
    if problems:
        raise ChaosError(f"{len(problems)} bad inputs misbehaved: " + "; ".join(problems[:5]))


def figures(journals: Path, _: Figures) -> str:
    """The line's figures: bad calls made, refused with a tenure error, and not."""
    calls = list(read_folder(journals).of_kind("bad-input"))
    refused = sum(1 for r in calls if r.get("ended") == "refused" and not r.get("changed"))
    kinds = sorted({str(r.get("error")) for r in calls if r.get("ended") == "refused"})
    problems = len(calls) - refused
    return f" bad-calls {len(calls)} refused {refused} ({','.join(kinds)}) problems {problems}"


HUGE = (10 * MB, 100 * MB)
"""Payloads far past the limit, made once per run: they take memory and time."""

BAD_INPUT = {
    "full": Plan(
        workers=4,
        concurrency=4,
        workloads=(tasks(2000, 51, rate=50), tasks(2000, 52, rate=50)),
        faults=10,
        every=(0.5, 1.0),
    ),
    "quick": Plan(
        workers=2,
        concurrency=4,
        workloads=(tasks(150, 51, rate=30), tasks(150, 52, rate=30)),
        faults=1,
        every=(0.2, 0.5),
        drain=120,
    ),
}
SCENARIO = Scenario("bad-input", BAD_INPUT, bad_input, figures=figures)
