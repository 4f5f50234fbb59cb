"""The observer's queries without a store: what an Observation accepts, when its
slots fall, the task filter it asks the store for, and the query it saves with
each report. (Runs against real stores: tests/conformance/test_reports.py.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from tenure import InvalidInput, Status
from tenure.maintenance.observer import Observation, Observer
from tenure.store import TaskFilter
from tenure.store.eventlog import MAX_REPORT_IDS

NOW = datetime(2030, 5, 1, 14, 30, 15, 250_000, tzinfo=UTC)

# -- validation --------------------------------------------------------------------


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"key": ""}, "key"),
    ({"topic": ""}, "topic"),
    ({"group": 5}, "group"),
    ({"status": "done"}, "status"),
    ({"status": "finished"}, "status"),
    ({"at": "12:00:00", "every": 60}, "every"),
    ({"every": 0.5}, "every"),
    ({"every": 0}, "every"),
    ({"every": -60}, "every"),
    ({"every": float("nan")}, "every"),
    ({"at": "25:00:00"}, "at"),
    ({"at": "noon"}, "at"),
    ({"at": "12:00:00 tomorrow"}, "at"),
    ({"age": -1}, "age"),
    ({"age": "1"}, "age"),
    ({"since": "yesterday"}, "since"),
    ({"since": "Today"}, "since"),
    ({"since": 0}, "since"),
    ({"since": -3600}, "since"),
    ({"limit": -1}, "limit"),
    ({"limit": MAX_REPORT_IDS + 1}, "limit"),
    ({"limit": 1.5}, "limit"),
    ({"limit": True}, "limit"),
]


@pytest.mark.parametrize(("fields", "field"), REFUSED, ids=[str(f) for f, _ in REFUSED])
def test_a_bad_observation_is_refused(fields: dict[str, Any], field: str) -> None:
    values: dict[str, Any] = {"key": "k", **fields}
    with pytest.raises(InvalidInput) as raised:
        Observation(**values)
    assert raised.value.field == field


ACCEPTED: list[dict[str, Any]] = [
    {"status": Status.DONE},
    {"every": 1},
    {"every": 3600.5},
    {"at": "23:59:59"},
    {"at": "06:30"},
    {"age": 0},
    {"since": "today"},
    {"since": 0.5},
    {"limit": 0},
    {"limit": MAX_REPORT_IDS},
]


@pytest.mark.parametrize("fields", ACCEPTED, ids=[str(f) for f in ACCEPTED])
def test_a_good_observation_is_accepted(fields: dict[str, Any]) -> None:
    observation = Observation("k", **fields)
    for name, value in fields.items():
        assert getattr(observation, name) == value


def test_without_a_schedule_it_runs_daily_at_midnight_utc() -> None:
    observation = Observation("k")
    assert (observation.at, observation.every) == ("00:00:00", None)
    assert observation.slot(NOW) == datetime(2030, 5, 1, tzinfo=UTC)


def test_an_interval_has_no_time_of_day() -> None:
    assert Observation("k", every=60).at is None


def test_two_observations_may_not_share_a_key() -> None:
    Observer([Observation("a"), Observation("b")])
    with pytest.raises(InvalidInput) as raised:
        Observer([Observation("a"), Observation("b", every=60), Observation("a", every=5)])
    assert raised.value.field == "observe"


# -- slots -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("every", "slot"),
    [
        (1, datetime(2030, 5, 1, 14, 30, 15, tzinfo=UTC)),
        (60, datetime(2030, 5, 1, 14, 30, tzinfo=UTC)),
        (3600, datetime(2030, 5, 1, 14, tzinfo=UTC)),
        (86_400, datetime(2030, 5, 1, tzinfo=UTC)),
        (7, datetime.fromtimestamp(NOW.timestamp() // 7 * 7, UTC)),
    ],
)
def test_an_interval_slot_is_the_last_multiple_at_or_before_now(every: int, slot: datetime) -> None:
    observation = Observation("k", every=every)
    assert observation.slot(NOW) == slot
    assert slot <= NOW < slot + timedelta(seconds=every)
    assert observation.slot(slot) == slot  # a slot is its own slot
    assert observation.slot(slot - timedelta(microseconds=1)) == slot - timedelta(seconds=every)


def test_an_interval_slot_is_utc_whatever_the_zone_of_now() -> None:
    local = NOW.astimezone(timezone(timedelta(hours=-5)))
    slot = Observation("k", every=60).slot(local)
    assert slot == datetime(2030, 5, 1, 14, 30, tzinfo=UTC)
    assert slot.utcoffset() == timedelta(0)


def test_a_time_of_day_already_passed_today_is_todays_slot() -> None:
    observation = Observation("k", at="14:30:00")
    assert observation.slot(NOW) == datetime(2030, 5, 1, 14, 30, tzinfo=UTC)
    assert observation.slot(datetime(2030, 5, 1, 14, 30, tzinfo=UTC)) == datetime(
        2030, 5, 1, 14, 30, tzinfo=UTC
    )


def test_a_time_of_day_still_to_come_today_is_yesterdays_slot() -> None:
    observation = Observation("k", at="14:30:16")
    assert observation.slot(NOW) == datetime(2030, 4, 30, 14, 30, 16, tzinfo=UTC)
    assert Observation("k", at="23:00:00").slot(datetime(2030, 1, 1, 1, tzinfo=UTC)) == (
        datetime(2029, 12, 31, 23, tzinfo=UTC)
    )


def test_a_time_of_day_is_utc_whatever_the_zone_of_now() -> None:
    tokyo = timezone(timedelta(hours=9))
    now = datetime(2030, 5, 2, 8, 0, tzinfo=tokyo)  # 23:00 on May 1st, UTC
    slot = Observation("k", at="22:00:00").slot(now)
    assert slot == datetime(2030, 5, 1, 22, tzinfo=UTC)


# -- filters ---------------------------------------------------------------------------


def test_the_fields_of_a_query_become_the_store_filter() -> None:
    observation = Observation(
        "k", status=Status.FAILED, topic="mail", sub_topic="bulk", name="send", group="g1"
    )
    assert observation.filters(NOW) == TaskFilter(
        topic="mail", sub_topic="bulk", status=Status.FAILED, name="send", group_id="g1"
    )


def test_no_fields_match_every_task() -> None:
    assert Observation("k").filters(NOW) == TaskFilter()


def test_age_bounds_the_newest_creation_time() -> None:
    assert Observation("k", age=1).filters(NOW).created_to == NOW - timedelta(seconds=1)
    assert Observation("k", age=90.5).filters(NOW).created_to == NOW - timedelta(seconds=90.5)
    assert Observation("k", age=0).filters(NOW).created_to == NOW
    assert Observation("k", age=1).filters(NOW).created_from is None


def test_since_bounds_the_oldest_creation_time() -> None:
    assert Observation("k", since=3600).filters(NOW).created_from == NOW - timedelta(hours=1)
    assert Observation("k", since=3600).filters(NOW).created_to is None


def test_since_today_starts_at_midnight_utc() -> None:
    filters = Observation("k", since="today").filters(NOW)
    assert filters.created_from == datetime(2030, 5, 1, tzinfo=UTC)
    tokyo = NOW.astimezone(timezone(timedelta(hours=12)))  # May 2nd there
    assert Observation("k", since="today").filters(tokyo).created_from == datetime(
        2030, 5, 1, tzinfo=UTC
    )


def test_age_and_since_make_a_window() -> None:
    filters = Observation("k", age=60, since=3600, status=Status.PENDING).filters(NOW)
    assert (filters.created_from, filters.created_to, filters.status) == (
        NOW - timedelta(hours=1),
        NOW - timedelta(minutes=1),
        Status.PENDING,
    )


# -- describe --------------------------------------------------------------------------


def test_describe_names_only_what_was_given() -> None:
    assert Observation("k").describe() == {"at": "00:00:00"}
    assert Observation("k", every=60).describe() == {"every": 60}


def test_describe_is_the_whole_query_as_json() -> None:
    observation = Observation(
        "k",
        status=Status.DONE,
        topic="mail",
        sub_topic="bulk",
        name="send",
        group="g1",
        age=1,
        since="today",
        at="06:30:00",
        limit=5,
    )
    described = observation.describe()
    assert described == {
        "status": "done",
        "topic": "mail",
        "sub_topic": "bulk",
        "name": "send",
        "group": "g1",
        "age": 1,
        "since": "today",
        "at": "06:30:00",
    }
    assert json.loads(json.dumps(described)) == described
    assert type(described["status"]) is str  # not the enum


def test_a_time_of_day_with_an_offset_runs_at_that_time_in_utc() -> None:
    observation = Observation("k", at="12:00:00+02:00")
    assert observation.slot(NOW) == datetime(2030, 5, 1, 10, tzinfo=UTC)
    # Just after midnight UTC it is still the day before's 10:00 UTC.
    late = Observation("k", at="01:00:00+02:00")  # 23:00 UTC the day before
    assert late.slot(datetime(2030, 5, 1, 22, 30, tzinfo=UTC)) == datetime(
        2030, 4, 30, 23, tzinfo=UTC
    )


@pytest.mark.parametrize("at", ["", 12, "25:00:00"])
def test_a_time_of_day_must_be_one(at: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        Observation("k", at=at)  # type: ignore[arg-type]
    assert refused.value.field == "at"
