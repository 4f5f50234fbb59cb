"""Task ids made in a forked child are never the ones its parent makes: the
child draws its own randomness and starts its own sequence."""

from __future__ import annotations

import os
import time
import uuid

import pytest

from tenure import ids
from tenure.ids import new_id


def _in_child_and_parent() -> tuple[str, str]:
    """The next id a forked child makes, and the next one its parent makes."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one id, then gone
        os.write(write, new_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    assert os.waitpid(pid, 0)[1] == 0
    return child, new_id()


@pytest.fixture
def one_millisecond(monkeypatch: pytest.MonkeyPatch) -> int:
    """The clock stopped, in the child as in the parent: every id of the test
    falls in one millisecond, where only the random bits and the sequence tell
    two ids apart."""
    now = time.time_ns()
    monkeypatch.setattr(time, "time_ns", lambda: now)
    return now // 1_000_000


def test_a_child_does_not_share_its_parents_randomness(one_millisecond: int) -> None:
    new_id()  # the parent has read randomness it has not used up
    child, parent = _in_child_and_parent()
    assert child != parent
    assert {uuid.UUID(child).version, uuid.UUID(parent).version} == {7}


def test_a_child_does_not_continue_its_parents_sequence(one_millisecond: int) -> None:
    new_id()
    # The parent's last id is the highest of this millisecond: the next one of
    # any process continuing its sequence is that one plus one.
    highest = one_millisecond << 80 | ids._VERSION_BITS | ids._VARIANT_BITS
    highest |= ids._RANDOM_A | ids._RANDOM_B
    ids._last = highest
    child, parent = _in_child_and_parent()
    assert child != parent
    assert uuid.UUID(parent).int > highest  # the parent's own sequence goes on
