"""Instants in the API's form, at their one owner (``asyncwifi._instant``): written for any
year 1-9999, read back, floored to the millisecond; local times written with a ``Z`` never
read as UTC; and no other module of the package writes or reads one on its own."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asyncwifi
from asyncwifi._instant import (
    MS,
    floor_ms,
    fmt_time,
    format_instant,
    parse_local,
    parse_timestamp,
    read_instant,
    utc_time,
    utc_times,
)

PROPERTY = settings(max_examples=300, deadline=None)
#: every instant of the calendar datetime can hold, in UTC
INSTANTS = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999_999)
).map(lambda d: d.replace(tzinfo=UTC))
API_FORM = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
PACKAGE = Path(asyncwifi.__file__).parent


@PROPERTY
@given(INSTANTS)
def test_the_api_form_round_trips_to_the_millisecond_for_every_year(moment: datetime) -> None:
    text = format_instant(moment)
    assert API_FORM.fullmatch(text), text  # four-digit years, 0001 to 9999
    assert read_instant(text) == floor_ms(moment)
    assert utc_time(text) == floor_ms(moment)
    assert format_instant(floor_ms(moment)) == text


@PROPERTY
@given(INSTANTS, INSTANTS)
def test_microsecond_keys_round_trip_exactly_and_sort_like_time(a: datetime, b: datetime) -> None:
    ka, kb = format_instant(a, "microseconds"), format_instant(b, "microseconds")
    assert read_instant(ka) == a
    assert (ka < kb) == (a < b)


@PROPERTY
@given(INSTANTS, st.integers(-23 * 60, 23 * 60))
def test_an_offset_is_written_as_the_same_instant_in_utc(moment: datetime, minutes: int) -> None:
    zone = timezone(timedelta(minutes=minutes))
    try:
        local = moment.astimezone(zone)
    except OverflowError:
        return  # no such wall time in years 1-9999
    assert format_instant(local) == format_instant(moment)
    assert read_instant(local.isoformat()) == moment


@PROPERTY
@given(INSTANTS)
def test_flooring_cuts_to_the_millisecond_below(moment: datetime) -> None:
    floored = floor_ms(moment)
    assert floored <= moment < floored + MS
    assert floored.microsecond % 1000 == 0
    assert floored.tzinfo is UTC
    assert floor_ms(floored) == floored


@PROPERTY
@given(st.lists(st.one_of(st.none(), INSTANTS.map(format_instant), st.text(max_size=30))))
def test_a_page_of_times_reads_as_each_time_alone(texts: list[str | None]) -> None:
    assert utc_times(texts) == [utc_time(t) for t in texts]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-10T17:30:05Z", datetime(2024, 3, 10, 17, 30, 5, tzinfo=UTC)),
        ("2024-03-10T17:30:05.250Z", datetime(2024, 3, 10, 17, 30, 5, 250_000, tzinfo=UTC)),
        ("2024-03-10T18:30:05+01:00", datetime(2024, 3, 10, 17, 30, 5, tzinfo=UTC)),
        ("2024-03-10T17:30:05", datetime(2024, 3, 10, 17, 30, 5, tzinfo=UTC)),  # UTC
        (" 2024-03-10T17:30:05z ", datetime(2024, 3, 10, 17, 30, 5, tzinfo=UTC)),
        ("0999-01-01T00:00:00.000Z", datetime(999, 1, 1, tzinfo=UTC)),
        ("0001-01-01T00:30:00+01:00", None),  # before year 1 in UTC: no time, no error
        ("yesterday", None),
        ("", None),
        (None, None),
    ],
)
def test_a_records_utc_time_reads_the_apis_forms(text: str | None, expected: object) -> None:
    assert utc_time(text) == expected
    assert utc_times([text]) == [expected]


def test_a_local_time_written_with_a_z_is_never_utc() -> None:
    # observed.md: createdAtLocal is the venue's wall time, written with a Z anyway
    assert parse_local("2024-03-10T10:30:05.250Z") == datetime(2024, 3, 10, 10, 30, 5, 250_000)
    assert parse_local("2024-03-10T10:30:05+02:00") == datetime(2024, 3, 10, 10, 30, 5)
    assert parse_local("2024-03-10T10:30:05") == datetime(2024, 3, 10, 10, 30, 5)
    assert parse_local(None) is None
    assert parse_local("garbage") is None


def test_what_is_not_an_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="time zone"):
        format_instant(datetime(2024, 1, 1))  # naive: its zone would be a guess
    for text in ("", "yesterday", "2024-13-01"):
        with pytest.raises(ValueError):
            read_instant(text)
    assert parse_timestamp("") is None


def test_a_clock_time_in_logs_and_errors_is_the_same_writer_in_seconds() -> None:
    assert format_instant(1_700_000_000.75, "seconds") == "2023-11-14T22:13:20Z"
    year_385 = datetime(385, 6, 1, tzinfo=UTC).timestamp()
    assert format_instant(year_385, "seconds") == "0385-06-01T00:00:00Z"
    assert fmt_time(year_385) == "0385-06-01T00:00:00Z"  # the scheduler's logs and errors
    assert fmt_time(1e15) == "1000000000000000"  # past the calendar: the number itself


def test_no_other_module_writes_or_reads_an_instant_on_its_own() -> None:
    owners: dict[str, set[str]] = {"strftime(": set(), "fromisoformat(": set(), "%Y": set()}
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        for needle, found in owners.items():
            if needle in text:
                found.add(path.relative_to(PACKAGE).as_posix())
    assert owners["strftime("] == set()
    assert owners["fromisoformat("] == {"_instant.py"}
    assert owners["%Y"] <= {"cli/_resources.py"}  # click.DateTime's input format only
