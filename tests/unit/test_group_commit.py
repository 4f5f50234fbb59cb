"""Group commit: who writes with whom, and who is told what.

The writer here is a function that records each transaction it is asked for and
can be held open, so that callers arriving meanwhile queue behind it for certain
(the tests wait until they have queued, never for a time). The stores' own
group commit, on real databases, is tested in tests/conformance/test_group_commit.py.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tenure.errors import DuplicateTask, StoreError, StoreUnavailable
from tenure.ids import new_id
from tenure.store.grouping import GROUP_MAX_TASKS, GroupCommit
from tenure.store.types import NewTask, PreparedTask
from tenure.task import LockPhase, Task, UniqueRule
from tests.integration.workers import wait_for

AT = datetime(2026, 1, 1, tzinfo=UTC)
TEMPLATE = PreparedTask(
    id="",
    topic="t",
    sub_topic="default",
    name="job",
    data_json="{}",
    group_id=None,
    description=None,
    priority=0,
    max_attempts=1,
    tags=(),
    timeout=None,
    run_at=None,
    delay=0.0,
    unique=None,
    meta=None,
    expires=None,
    limit_key=None,
    limit_max=None,
    order_key=None,
    fair_key=None,
)


def tasks(*ids: str) -> list[PreparedTask]:
    return [replace(TEMPLATE, id=task_id) for task_id in ids]


class Writer:
    """Records each write; the first is held open until :meth:`release`;
    ``fail`` decides, per write, what it raises instead of writing."""

    def __init__(
        self, fail: Callable[[list[str]], BaseException | None] = lambda ids: None
    ) -> None:
        self.writes: list[list[str]] = []
        self.started = threading.Event()
        self.released = threading.Event()
        self.fail = fail

    def __call__(self, batch: list[PreparedTask]) -> list[Task]:
        ids = [task.id for task in batch]
        self.writes.append(ids)
        if len(self.writes) == 1:
            self.started.set()
            assert self.released.wait(10)
        refusal = self.fail(ids)
        if refusal is not None:
            raise refusal
        return [task.created(AT, None) for task in batch]

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(8) as executor:
        yield executor


def queued_behind_first(
    group: GroupCommit, writer: Writer, pool: ThreadPoolExecutor, callers: list[list[str]]
) -> list[Future[list[Task]]]:
    """Start the first caller, wait until its write is held open, start the
    others and wait until all of them have queued; every caller's future."""
    first = pool.submit(group.create, tasks(*callers[0]))
    assert writer.started.wait(10)
    rest = [pool.submit(group.create, tasks(*ids)) for ids in callers[1:]]
    wait_for(lambda: len(group._queue) == len(rest), "the callers to queue")
    writer.release()
    return [first, *rest]


def test_a_caller_alone_writes_at_once_in_a_transaction_of_its_own() -> None:
    writer = Writer()
    writer.release()
    group = GroupCommit(writer)
    assert [t.id for t in group.create(tasks("a", "b"))] == ["a", "b"]
    assert [t.id for t in group.create(tasks("c"))] == ["c"]
    assert writer.writes == [["a", "b"], ["c"]]


def test_callers_arriving_during_a_write_share_the_next_one(pool: ThreadPoolExecutor) -> None:
    writer = Writer()
    group = GroupCommit(writer)
    futures = queued_behind_first(group, writer, pool, [["a"], ["b1", "b2"], ["c"], ["d"]])
    answers = [[t.id for t in future.result(10)] for future in futures]
    assert answers == [["a"], ["b1", "b2"], ["c"], ["d"]]
    assert writer.writes[0] == ["a"]
    assert len(writer.writes) == 2, "the three queued callers took more than one write"
    assert sorted(writer.writes[1]) == ["b1", "b2", "c", "d"]
    assert writer.writes[1].index("b1") + 1 == writer.writes[1].index("b2")


@pytest.mark.parametrize("failure", [StoreUnavailable, StoreError, DuplicateTask])
def test_a_shared_write_that_failed_otherwise_is_not_written_again(
    pool: ThreadPoolExecutor, failure: type[Exception]
) -> None:
    """A lost connection may have lost only the answer to a commit (and an error
    at commit may leave it unknown): writing again could create the tasks
    twice, so every caller is told it failed, each with an error of its own.
    (No caller's own task can be refused: their ids are the store's.)"""

    def lost(ids: list[str]) -> Exception | None:
        return failure("connection lost") if len(ids) > 1 else None

    writer = Writer(lost)
    group = GroupCommit(writer)
    futures = queued_behind_first(group, writer, pool, [["a"], ["b"], ["c"]])
    assert [t.id for t in futures[0].result(10)] == ["a"]
    errors = []
    for future in futures[1:]:
        with pytest.raises(failure, match="connection lost") as raised:
            future.result(10)
        errors.append(raised.value)
    assert errors[0] is not errors[1]
    assert errors[0].__cause__ is errors[1].__cause__
    assert len(writer.writes) == 2


def test_the_lead_passes_on_after_a_failed_write(pool: ThreadPoolExecutor) -> None:
    def broken_first(ids: list[str]) -> Exception | None:
        return StoreError("disk full") if ids == ["a"] else None

    writer = Writer(broken_first)
    group = GroupCommit(writer)
    futures = queued_behind_first(group, writer, pool, [["a"], ["b"], ["c"]])
    with pytest.raises(StoreError, match="disk full"):
        futures[0].result(10)
    assert [[t.id for t in f.result(10)] for f in futures[1:]] == [["b"], ["c"]]
    writer.fail = lambda ids: None
    assert [t.id for t in group.create(tasks("d"))] == ["d"], "nobody leads any more"


def test_the_lead_passes_on_when_a_write_alone_is_interrupted(pool: ThreadPoolExecutor) -> None:
    """A caller alone writes without queueing; interrupted in its write (Ctrl-C
    in the thread), it still hands the lead to the callers that queued."""

    def interrupted_first(ids: list[str]) -> BaseException | None:
        return KeyboardInterrupt() if ids == ["a"] else None

    writer = Writer(interrupted_first)
    group = GroupCommit(writer)
    futures = queued_behind_first(group, writer, pool, [["a"], ["b"], ["c"]])
    with pytest.raises(KeyboardInterrupt):
        futures[0].result(10)
    assert [[t.id for t in f.result(10)] for f in futures[1:]] == [["b"], ["c"]]
    assert group._leader is None and not group._queue


@pytest.mark.parametrize("queued", [False, True])
def test_an_enqueue_by_a_signal_handler_during_the_hand_off_writes_at_once(
    pool: ThreadPoolExecutor, queued: bool
) -> None:
    """A handler running in the leader's thread while it passes the lead on
    (the lock held) writes its tasks at once, as it would during the write,
    instead of waiting on the lock or behind its own thread."""
    writer = Writer()
    group = GroupCommit(writer)
    leader: list[int] = []
    nested: list[list[str]] = []
    hand_off = group._pass_lead

    def interrupted_hand_off() -> None:
        if not nested and threading.get_ident() == leader[0]:
            nested.append([t.id for t in group.create(tasks("handler"))])
        hand_off()

    def first() -> list[Task]:
        leader.append(threading.get_ident())
        return group.create(tasks("a"))

    group._pass_lead = interrupted_hand_off  # type: ignore[method-assign]
    futures = [pool.submit(first)]
    assert writer.started.wait(10)
    if queued:  # the lone writer hands on to a queued caller
        futures.append(pool.submit(group.create, tasks("b")))
        wait_for(lambda: len(group._queue) == 1, "the second caller to queue")
    writer.release()
    assert [t.id for t in futures[0].result(10)] == ["a"]
    assert nested == [["handler"]]
    if queued:
        assert [t.id for t in futures[1].result(10)] == ["b"]
    wait_for(lambda: not group._writing and group._leader is None, "the group to be idle")


def test_a_shared_write_holds_at_most_its_cap_of_tasks(pool: ThreadPoolExecutor) -> None:
    writer = Writer()
    group = GroupCommit(writer)
    third = GROUP_MAX_TASKS // 3 + 1
    callers = [["first"], *[[f"{n}-{i}" for i in range(third)] for n in range(3)]]
    futures = queued_behind_first(group, writer, pool, callers)
    for future, ids in zip(futures, callers, strict=True):
        assert [t.id for t in future.result(10)] == ids
    assert [len(ids) for ids in writer.writes] == [1, 2 * third, third]


def test_a_caller_interrupted_while_queued_withdraws_its_tasks(pool: ThreadPoolExecutor) -> None:
    """The main thread queues behind a held write; a signal interrupts its
    wait. Its tasks are never written, and the callers after it go on."""

    class Interrupted(Exception):
        pass

    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted

    writer = Writer()
    group = GroupCommit(writer)
    first = pool.submit(group.create, tasks("first"))
    assert writer.started.wait(10)
    main = threading.get_ident()

    def signal_once_queued() -> None:
        wait_for(lambda: group._queue, "the main thread to queue")
        signal.pthread_kill(main, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        pool.submit(signal_once_queued)
        with pytest.raises(Interrupted):
            group.create(tasks("interrupted"))
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert group._queue == []
    writer.release()
    assert [t.id for t in first.result(10)] == ["first"]
    assert [t.id for t in group.create(tasks("after"))] == ["after"]
    assert writer.writes == [["first"], ["after"]]


def test_only_tasks_the_store_names_and_without_unique_locks_join() -> None:
    plain = NewTask(topic="t", name="job")
    assert GroupCommit.joinable([plain] * GROUP_MAX_TASKS)
    assert not GroupCommit.joinable([plain] * (GROUP_MAX_TASKS + 1))
    assert not GroupCommit.joinable([plain, replace(plain, id="mine")])
    assert GroupCommit.joinable([plain, replace(plain, id=new_id())])  # tenure's own
    assert not GroupCommit.joinable(
        [plain, replace(plain, unique=UniqueRule(key="k", lock=LockPhase.WHILE_EXECUTING))]
    )


def test_a_child_process_forked_during_a_write_starts_empty(pool: ThreadPoolExecutor) -> None:
    """The parent's leader and queue do not exist in the child: its first
    creation leads at once instead of waiting for them forever."""
    writer = Writer()
    group = GroupCommit(writer)
    first = pool.submit(group.create, tasks("first"))
    assert writer.started.wait(10)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit code is the assertion
        signal.alarm(10)  # a creation that never returns ends the child by SIGALRM
        group.create(tasks("child"))
        os._exit(0)
    writer.release()
    assert [t.id for t in first.result(10)] == ["first"]
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child's creation never returned"
