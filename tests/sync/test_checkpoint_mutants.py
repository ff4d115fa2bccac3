"""The checkpoint's pieces on their own: an event's UTC time whatever its text (and the
machine's zone), the checkpoint text and its refusals, and the cursor's fields."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest

from asyncwifi import Event
from asyncwifi._cursor import TimeCursor, parse_checkpoint
from asyncwifi._instant import floor_ms as ms_floor
from asyncwifi._instant import utc_time, utc_times
from asyncwifi.errors import ValidationError

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def event_time(event: Event) -> datetime | None:
    """An event's UTC time as the sync reads it (the owner: ``_instant``)."""
    return utc_time(event.time_text)


def event_times(events: list[Event]) -> list[datetime | None]:
    """A page's times at once, as the feed reads them."""
    return utc_times(e.time_text for e in events)


def _event(date: str | None) -> Event:
    return msgspec.json.decode(msgspec.json.encode({"id": "e1", "date": date}), type=Event)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01T00:00:00Z", T0),
        ("2024-01-01T00:00:00.250Z", T0 + timedelta(milliseconds=250)),
        ("2024-01-01T01:00:00+01:00", T0),
        ("2023-12-31T19:00:00-05:00", T0),
        ("2024-01-01T00:00:00", T0),  # no zone: UTC, whatever the machine's zone
        (" 2024-01-01T00:00:00Z", T0),  # odd texts take the general parser
        ("2024-01-01T00:00:00z", T0),
        ("not a time", None),
        (None, None),
    ],
)
def test_an_events_time_is_aware_utc_whatever_its_text(
    zone_new_york: None, text: str | None, expected: datetime | None
) -> None:
    got = event_time(_event(text))
    assert got == expected
    if got is not None:
        assert got.tzinfo is UTC
    assert event_times([_event(text)]) == [expected]


def test_a_pages_times_read_at_once_are_utc_in_any_local_zone(zone_new_york: None) -> None:
    texts = ["2024-01-01T00:00:00Z", "2024-01-01T01:00:00+01:00", "2024-01-01T00:00:01", None]
    times = event_times([_event(t) for t in texts])
    assert times == [T0, T0, T0 + timedelta(seconds=1), None]
    assert all(t.tzinfo is UTC for t in times if t is not None)


def test_a_checkpoint_that_is_not_one_is_refused_quoting_60_characters() -> None:
    long_text = "x" * 100
    with pytest.raises(
        ValidationError, match=f"^{re.escape(f'not a events checkpoint: {long_text[:60]!r}')}$"
    ):
        parse_checkpoint(long_text, "events")
    other = '{"v":1,"kind":"contacts","at":"2024-01-01T00:00:00.000Z","carry":[],"fresh":[]}'
    message = f"not a version 1 events checkpoint: {other[:60]!r}"
    with pytest.raises(ValidationError, match=f"^{re.escape(message)}$"):
        parse_checkpoint(other, "events")
    assert parse_checkpoint(other, "contacts")["at"] == "2024-01-01T00:00:00.000Z"


def test_a_record_out_of_time_order_marks_the_window_untimed() -> None:
    cursor = TimeCursor.start("events", None, T0)
    assert cursor.timed is True
    cursor.add("a", T0 + timedelta(seconds=2))
    cursor.add("b", T0 + timedelta(seconds=1))  # older than ``at``: the span is untimed
    assert cursor.timed is False
    assert cursor == TimeCursor("events", T0 + timedelta(seconds=2), set(), {"a", "b"}, False)
    # a new span restarts the time-order check (the untimed one was not saved mid-way)
    assert cursor.begin_span(T0 + timedelta(hours=1)) == T0 + timedelta(hours=1)
    assert cursor.timed is True


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (T0 + timedelta(microseconds=1_500), T0 + timedelta(milliseconds=1)),
        (T0 + timedelta(microseconds=1_001), T0 + timedelta(milliseconds=1)),
        (T0 + timedelta(microseconds=999), T0),
        (T0 + timedelta(milliseconds=7), T0 + timedelta(milliseconds=7)),
        (
            datetime(2024, 1, 1, 1, 0, 0, 2_500, tzinfo=timezone(timedelta(hours=1))),
            T0 + timedelta(milliseconds=2),
        ),
    ],
)
def test_ms_floor_cuts_to_the_millisecond_in_utc(
    zone_new_york: None, when: datetime, expected: datetime
) -> None:
    got = ms_floor(when)
    assert got == expected
    assert got.tzinfo is UTC


def test_a_nested_records_time_is_its_created_at() -> None:
    nested = msgspec.json.decode(
        b'{"event":{"type":"visit","id":"n1"},"when":{"createdAt":"2024-01-01T00:00:02Z"},'
        b'"date":"2020-01-01T00:00:00Z"}',
        type=Event,
    )
    assert event_times([nested]) == [T0 + timedelta(seconds=2)] == [event_time(nested)]


def test_a_checkpoint_round_trips_every_id() -> None:
    cursor = TimeCursor("events", T0 + timedelta(milliseconds=5), {"c1", "c2"}, {"f1", "f2"})
    restored = TimeCursor.start("events", cursor.encode(), T0)
    assert (restored.at, restored.carry, restored.fresh) == (cursor.at, cursor.carry, cursor.fresh)


def test_a_damaged_checkpoint_is_refused_quoting_60_characters() -> None:
    damaged = '{"v":1,"kind":"events","carry":[],"fresh":[],"note":"' + "y" * 80 + '"}'
    message = f"a damaged events checkpoint: {damaged[:60]!r}"
    with pytest.raises(ValidationError, match=f"^{re.escape(message)}$"):
        TimeCursor.start("events", damaged, T0)


def test_a_page_all_at_the_current_millisecond_keeps_what_is_there() -> None:
    cursor = TimeCursor("events", T0, {"c1"}, {"f1"})
    cursor.add_page(
        ["x", "y"], [T0 + timedelta(microseconds=200), T0 + timedelta(microseconds=900)]
    )
    assert (cursor.at, cursor.carry, cursor.fresh) == (T0, {"c1"}, {"f1", "x", "y"})


def test_completing_at_the_cursors_own_time_changes_nothing() -> None:
    cursor = TimeCursor("events", T0, {"c1"}, {"f1"})
    cursor.complete(T0 + timedelta(microseconds=300))  # the same millisecond
    assert (cursor.at, cursor.carry, cursor.fresh, cursor.timed) == (T0, {"c1"}, {"f1"}, True)


def test_after_a_window_completes_timed_records_move_the_cursor_again() -> None:
    cursor = TimeCursor.start("events", None, T0)
    cursor.add("untimed", None)
    assert cursor.timed is False
    end = T0 + timedelta(hours=1)
    cursor.complete(end)
    assert cursor.timed is True  # without begin_span(): a new span starts timed
    cursor.add("later", end + timedelta(seconds=1))
    assert (cursor.at, cursor.carry, cursor.fresh) == (end + timedelta(seconds=1), set(), {"later"})
