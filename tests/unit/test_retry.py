"""tenure.retry.Backoff: how long a failed attempt waits before the next."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from tenure.errors import InvalidInput
from tenure.retry import Backoff


def test_defaults_are_the_documented_ones() -> None:
    assert Backoff() == Backoff(base=1, factor=2, maximum=600, jitter=0.5, priority_step=1)


def test_delays_grow_by_factor_from_base_and_stop_at_the_maximum() -> None:
    backoff = Backoff(base=0.5, factor=3, maximum=20, jitter=0)
    delays = [backoff.delay(retry) for retry in range(1, 7)]
    assert delays == pytest.approx([0.5, 1.5, 4.5, 13.5, 20, 20])


def test_a_huge_retry_number_waits_the_maximum_without_overflow() -> None:
    assert Backoff(factor=100, jitter=0).delay(10_000) == 600


@pytest.mark.parametrize("jitter", [0.0, 0.25, 0.5, 1.0])
@pytest.mark.parametrize("retry", [1, 4, 20])  # below, near and past the maximum
def test_jitter_scales_the_delay_down_by_at_most_its_fraction(jitter: float, retry: int) -> None:
    backoff = Backoff(base=1, factor=2, maximum=60, jitter=jitter)
    full = min(60, 2 ** (retry - 1))
    rand = random.Random(retry)
    draws = [backoff.delay(retry, rand) for _ in range(2000)]
    low = full * (1 - jitter)
    assert all(low <= d <= full for d in draws)
    # ... and spreads over the whole band, not just part of it
    assert min(draws) <= low + 0.01 * (full - low)
    assert max(draws) >= full - 0.01 * (full - low)


def test_the_same_random_source_draws_the_same_delays() -> None:
    backoff = Backoff()
    first = [backoff.delay(3, random.Random(42)) for _ in range(5)]
    assert first == [backoff.delay(3, random.Random(42)) for _ in range(5)]
    assert len({backoff.delay(3) for _ in range(5)}) > 1  # the default source varies


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base", -1.0),
        ("base", math.nan),
        ("base", math.inf),
        ("base", True),
        ("maximum", -0.1),
        ("maximum", math.inf),
        ("factor", 0.99),
        ("factor", 100.5),
        ("factor", math.nan),
        ("jitter", -0.01),
        ("jitter", 1.01),
        ("jitter", math.nan),
        ("priority_step", -1),
        ("priority_step", 1.5),
        ("priority_step", True),
    ],
)
def test_invalid_settings_are_refused(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        Backoff(**{field: value})  # type: ignore[arg-type]
    assert refused.value.field == f"backoff.{field}"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base", 0),
        ("maximum", 0),
        ("factor", 1),
        ("factor", 100),
        ("jitter", 0),
        ("jitter", 1),
        ("priority_step", 0),
        ("priority_step", 10),
    ],
)
def test_settings_at_their_bounds_are_accepted(field: str, value: float) -> None:
    assert getattr(Backoff(**{field: value}), field) == value  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["factor", "jitter"])
@pytest.mark.parametrize("value", ["0.5", True, None])
def test_a_setting_that_is_not_a_number_is_refused_as_invalid_input(
    field: str, value: object
) -> None:
    with pytest.raises(InvalidInput) as refused:
        Backoff(**{field: value})  # type: ignore[arg-type]
    assert refused.value.field == f"backoff.{field}"


def test_delays_are_the_backoffs_waits_in_turn_for_a_loop_that_tries_until_it_works() -> None:
    polls = Backoff(base=0.005, maximum=0.25, jitter=0.0)
    waits = list(itertools.islice(polls.delays(), 8))
    assert waits == [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.25, 0.25]
    spread = Backoff(base=1.0, maximum=8.0, jitter=0.5).delays(random.Random(7))
    for full, wait in zip([1, 2, 4, 8, 8], itertools.islice(spread, 5), strict=True):
        assert full * 0.5 <= wait <= full
