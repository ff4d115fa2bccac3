"""Hypothesis fuzzing of what the SDK reads and what users type.

Decoders: valid pages mutated byte by byte, cut, spliced (arbitrary bytes and arbitrary
JSON are fuzzed in tests/unit/test_decode.py): anything but ``DecodeError`` or a clean
result is a failure. Query builders and validators: only ``ValidationError`` or a result,
and a result that is well-formed. The command line: random dates, types, slices and sizes
give a documented exit status and one error line, never a traceback.
(The webhook receiver is fuzzed over HTTP in tests/webhooks/test_fuzz.py.)
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from asyncwifi._protocol import build_query, format_datetime, path_segment
from asyncwifi._resources._events import validate_event_query
from asyncwifi.cli import ExitCode, main
from asyncwifi.errors import DecodeError, ValidationError
from asyncwifi.models import Event, decode, decode_page
from asyncwifi.models._contacts import ContactPage
from asyncwifi.models._events import EventPage
from asyncwifi.models._hotspots import HotspotPage
from asyncwifi.models._segments import SegmentPage
from tests.fixtures.models import contact_page, dumps, event_page, hotspot_page, segment_page

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID_PAGES: list[tuple[type[Any], bytes]] = [
    (EventPage, dumps(event_page(8))),
    (ContactPage, dumps(contact_page(6))),
    (HotspotPage, dumps(hotspot_page(4))),
    (SegmentPage, dumps(segment_page(4))),
]


@st.composite
def mutated_pages(draw: st.DrawFn) -> tuple[type[Any], bytes]:
    page_type, body = draw(st.sampled_from(VALID_PAGES))
    data = bytearray(body)
    for _ in range(draw(st.integers(1, 6))):
        how = draw(st.sampled_from(["flip", "cut", "insert", "delete", "splice"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if how == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif how == "cut":
            del data[at:]
        elif how == "insert":
            data[at:at] = draw(
                st.sampled_from([b"{", b"}", b"[", b"]", b",", b'"', b"null", b"1e999", b"\\u"])
                | st.binary(max_size=8)
            )
        elif how == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        else:
            other = draw(st.sampled_from(VALID_PAGES))[1]
            start = draw(st.integers(0, len(other)))
            data[at:at] = other[start : start + draw(st.integers(1, 64))]
    return page_type, bytes(data)


@FUZZ
@given(case=mutated_pages(), keep_raw=st.booleans())
def test_a_mutated_page_decodes_cleanly_or_raises_decode_error(
    case: tuple[type[Any], bytes], keep_raw: bool
) -> None:
    page_type, data = case
    seen: list[Any] = []
    try:
        page = decode_page(data, page_type, keep_raw=keep_raw, on_item_error=seen.append)
    except DecodeError:
        return
    assert isinstance(page.envelope, page_type)
    assert seen == list(page.errors)  # every bad record reported, once
    if keep_raw:
        assert page.raw_items is not None
        assert len(page.raw_items) == len(page.items)


# invalid UTF-8 inside a JSON string: msgspec raises UnicodeDecodeError, not DecodeError
def test_invalid_utf8_in_a_string_is_a_decode_error_for_decode() -> None:
    with pytest.raises(DecodeError):
        decode(b'{"id": "\x80"}', Event)


def test_invalid_utf8_in_an_envelope_string_is_a_decode_error() -> None:
    with pytest.raises(DecodeError):
        decode_page(b'{"status": "\x80OK", "events": []}', EventPage)


def test_invalid_utf8_in_a_record_is_reported_not_raised() -> None:
    good = b'{"id": "ev-1", "type": "visit", "date": "2024-01-01T00:00:00Z"}'
    page = decode_page(b'{"events": [{"id": "ev-\xff"}, ' + good + b"]}", EventPage)
    assert [e.id for e in page.items] == ["ev-1"]
    assert [e.index for e in page.errors] == [0]


def test_the_unmutated_pages_decode() -> None:
    for page_type, body in VALID_PAGES:
        page = decode_page(body, page_type)
        assert page.items
        assert not page.errors


anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.binary(max_size=8),
    st.datetimes(min_value=datetime(1, 1, 2)),
    st.datetimes(min_value=datetime(1, 1, 2), timezones=st.just(UTC)),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@FUZZ
@given(value=anything | st.text(alphabet="/.?#%&=:@ 2F", max_size=12))
def test_path_segment_is_one_segment_or_a_validation_error(value: Any) -> None:
    try:
        segment = path_segment(value, "id")
    except ValidationError:
        return
    assert isinstance(value, str)
    assert not {"/", "?", "#"} & set(segment)
    assert segment not in (".", "..")
    assert unquote(segment) == value


iso_like = st.builds(
    lambda d, sep, zone: d.isoformat(sep=sep) + zone,
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(["T", " "]),
    st.sampled_from(["", "Z", "z", "+00:00", "-05:30", "+14:00", "+2", "Q"]),
)
aware = st.datetimes(
    min_value=datetime(2, 1, 1),
    max_value=datetime(9998, 12, 31),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-11)), timezone(timedelta(hours=9))]),
)


@FUZZ
@given(value=anything | iso_like | aware)
def test_format_datetime_gives_utc_milliseconds_or_a_validation_error(value: Any) -> None:
    try:
        text = format_datetime(value, "date")
    except ValidationError:
        return
    parsed = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    assert len(text) == 24
    if isinstance(value, datetime):
        expected = value.astimezone(UTC).replace(tzinfo=None)
        assert parsed == expected.replace(microsecond=expected.microsecond // 1000 * 1000)


# glibc's strftime('%Y') does not zero-pad a year before 1000
def test_a_year_before_1000_is_formatted_with_four_digits() -> None:
    assert format_datetime("0999-01-01T00:00:00Z", "date") == "0999-01-01T00:00:00.000Z"


@FUZZ
@given(
    params=st.dictionaries(st.text(max_size=6), anything, max_size=4),
    extra=st.none() | st.dictionaries(st.text(max_size=6), anything, max_size=3),
)
def test_build_query_gives_strings_or_a_validation_error(
    params: dict[str, Any], extra: dict[str, Any] | None
) -> None:
    try:
        query = build_query(params, extra)
    except ValidationError:
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in query.items())
    for key, value in params.items():
        assert (key in query) == (value is not None)
        if isinstance(value, bool):
            assert query[key] in ("true", "false")


type_names = st.sampled_from(["visit", "login", "signup", "survey", "nope", "", "VISIT"])
types_values = st.none() | st.text(max_size=30) | st.lists(type_names | st.text(max_size=6))


@FUZZ
@given(
    date_start=st.none() | st.text(max_size=30) | iso_like | aware,
    date_end=st.none() | st.text(max_size=30) | iso_like | aware,
    types=types_values,
    size=st.integers(-5, 10_005) | st.sampled_from([True, 1.5, "10"]),
    sort_by=st.none() | st.sampled_from(["businessTime", "utcTime", "", "time"]) | st.text(),
)
def test_validate_event_query_gives_wire_parameters_or_a_validation_error(
    date_start: Any, date_end: Any, types: Any, size: Any, sort_by: Any
) -> None:
    try:
        query = validate_event_query(
            date_start=date_start, date_end=date_end, types=types, size=size, sort_by=sort_by
        )
    except ValidationError:
        return
    assert isinstance(size, int)
    assert 1 <= query["size"] <= 10_000  # type: ignore[operator]
    if query["dateStart"] is not None and query["dateEnd"] is not None:
        assert query["dateStart"] <= query["dateEnd"]  # type: ignore[operator]


# -- the command line -------------------------------------------------------------------------

DOCUMENTED = {code.value for code in ExitCode}
dates = st.one_of(
    st.text(max_size=25),
    st.sampled_from(["2026-01-01", "2026-01-08", "2026-02-30", "2026-13-01", "yesterday", ""]),
    iso_like,
)
cli_options = st.fixed_dictionaries(
    {"--since": dates, "--until": dates},
    optional={
        "--types": st.text(max_size=20) | st.sampled_from(["visit,login", "visit,,", "x"]),
        "--slice": st.text(max_size=6) | st.sampled_from(["1d", "6h", "0s", "-1d", "90m"]),
        "--page-size": st.text(max_size=6) | st.integers(-3, 10_003).map(str),
        "--concurrency": st.integers(-1, 40).map(str) | st.text(max_size=3),
    },
)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No credentials anywhere; the CLI's logging setup is undone afterwards (main() run
    in-process installs a handler on the "asyncwifi" logger and stops its propagation)."""
    import logging
    import os

    sdk = logging.getLogger("asyncwifi")
    saved = sdk.propagate, sdk.level, list(sdk.handlers)

    for name in list(os.environ):
        if name.startswith("ASYNCWIFI_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for handler in list(sdk.handlers):
        if handler not in saved[2]:
            sdk.removeHandler(handler)
    sdk.propagate, level, _ = saved
    sdk.setLevel(level)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(options=cli_options, dry_run=st.booleans())
def test_random_backfill_arguments_never_give_a_traceback(
    options: dict[str, str],
    dry_run: bool,
    no_credentials: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assume(all("\x00" not in v for v in options.values()))
    args = ["events", "backfill", "--out", str(no_credentials / "out.jsonl")]
    for name, value in options.items():
        args += [name, value]
    if dry_run:
        args.append("--dry-run")
    code = main(args)  # an exception escaping here is the failure hypothesis reports
    _, err = capsys.readouterr()
    assert code in DOCUMENTED
    if code == ExitCode.OK:
        assert dry_run  # without credentials only a dry run can succeed
    else:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("asyncwifi: error: ")
        assert "Traceback" not in err
        assert code in (ExitCode.USAGE, ExitCode.CONFIG)
    assert not (no_credentials / "out.jsonl").exists() or not dry_run
