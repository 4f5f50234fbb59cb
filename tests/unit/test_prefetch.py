"""The number of tasks a worker holds waiting: fixed when given, else following
how long reservations and executions take."""

from __future__ import annotations

from tenure.worker.prefetch import CEILING, Prefetch


def test_a_given_number_is_kept_whatever_the_work() -> None:
    prefetch = Prefetch(concurrency=4, fixed=0)
    for _ in range(10):
        prefetch.reserved(0.01)
        prefetch.ran(0.000_01)
    assert prefetch.ahead == 0


def test_before_anything_is_measured_it_holds_as_many_as_it_runs() -> None:
    assert Prefetch(concurrency=4, fixed=None).ahead == 4


def test_long_tasks_keep_the_floor() -> None:
    prefetch = Prefetch(concurrency=4, fixed=None)
    prefetch.reserved(0.002)
    prefetch.ran(1.0)
    assert prefetch.ahead == 4


def test_short_tasks_hold_two_reservations_worth_of_work() -> None:
    prefetch = Prefetch(concurrency=4, fixed=None)
    prefetch.reserved(0.002)
    prefetch.ran(0.0005)  # 4 slots end 8,000 tasks a second: 16 per reservation
    assert prefetch.ahead == 32


def test_tiny_tasks_are_capped() -> None:
    prefetch = Prefetch(concurrency=4, fixed=None)
    prefetch.reserved(0.01)
    prefetch.ran(0.000_001)
    assert prefetch.ahead == CEILING


def test_it_follows_a_change_of_work() -> None:
    prefetch = Prefetch(concurrency=4, fixed=None)
    prefetch.reserved(0.002)
    prefetch.ran(0.0005)
    short = prefetch.ahead
    for _ in range(50):
        prefetch.ran(2.0)
    assert short > prefetch.ahead == 4
