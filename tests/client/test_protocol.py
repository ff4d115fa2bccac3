"""Sans-I/O protocol rules: argument checks, query strings, paths, status -> exception."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from asyncwifi import errors
from asyncwifi._protocol import build_query, format_datetime, path_segment
from asyncwifi._response import error_from_response
from asyncwifi._transport import Response, make_headers


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        ("abc", "abc"),
        ("a/b", "a%2Fb"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("x?y=1", "x%3Fy=1"),
        ("x#frag", "x%23frag"),
        ("100%", "100%25"),
        ("ünï", "%C3%BCn%C3%AF"),
        ("a..b", "a..b"),
    ],
)
def test_path_segment_keeps_an_id_inside_its_segment(raw: str, encoded: str) -> None:
    assert path_segment(raw, "id") == encoded
    assert "/" not in path_segment(raw, "id")


@pytest.mark.parametrize("bad", ["", "   ", "a\nb", "\x00", None, 12])
def test_path_segment_refuses_empty_and_control(bad: object) -> None:
    with pytest.raises(errors.ValidationError):
        path_segment(bad, "id")


def test_format_datetime_accepts_aware_and_zoned_strings() -> None:
    paris = timezone(timedelta(hours=1))
    assert (
        format_datetime(datetime(2026, 1, 1, 1, 0, tzinfo=paris), "d") == "2026-01-01T00:00:00.000Z"
    )
    assert format_datetime("2026-01-01T00:00:00Z", "d") == "2026-01-01T00:00:00.000Z"
    assert format_datetime("2026-01-01T02:00:00.250+02:00", "d") == "2026-01-01T00:00:00.250Z"
    assert format_datetime(datetime(2026, 5, 1, tzinfo=UTC), "d") == "2026-05-01T00:00:00.000Z"


@pytest.mark.parametrize("bad", [datetime(2026, 1, 1), "2026-01-01T00:00:00", "yesterday", 5])
def test_format_datetime_refuses_naive_and_garbage(bad: object) -> None:
    with pytest.raises(errors.ValidationError):
        format_datetime(bad, "date_start")


def test_build_query_shapes_values() -> None:
    query = build_query({"a": True, "b": False, "c": None, "d": 3, "e": ["x", "y"]}, {"z": "1"})
    assert query == {"a": "true", "b": "false", "d": "3", "e": "x,y", "z": "1"}


def test_build_query_extra_cannot_override() -> None:
    with pytest.raises(errors.ValidationError, match="collides"):
        build_query({"size": 10}, {"size": 20})


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (401, errors.UnauthorizedError),
        (403, errors.ForbiddenError),
        (404, errors.NotFoundError),
        (409, errors.ConflictError),
        (410, errors.GoneError),
        (429, errors.RateLimitedError),
        (500, errors.ServerError),
        (503, errors.ServerError),
        (418, errors.ApiError),
    ],
)
def test_every_documented_status_has_its_exception(status: int, cls: type[errors.ApiError]) -> None:
    exc = error_from_response(
        "GET",
        "/v3/hotspots/x",
        status,
        make_headers({"X-Kong-Request-Id": "rid-1"}),
        b'{"message": "Access Denied"}',
        now=1000.0,
    )
    assert type(exc) is cls
    assert exc.status == status
    assert exc.message == "Access Denied"
    assert exc.request_id == "rid-1"
    assert "GET /v3/hotspots/x" in str(exc)


@pytest.mark.parametrize(
    ("headers", "rid"),
    [
        ({"X-Kong-Request-Id": "k", "X-Request-Id": "r"}, "k"),
        ({"X-Request-Id": "r"}, "r"),
        ({}, None),
    ],
)
def test_the_request_id_is_read_one_way_on_responses_and_errors(
    headers: dict[str, str], rid: str | None
) -> None:
    made = make_headers(headers)
    exc = error_from_response("GET", "/p", 500, made, b"", now=1.0)
    assert exc.request_id == Response(200, made, b"").request_id == rid


def test_429_carries_reset_and_reads_html_and_empty_bodies() -> None:
    headers = make_headers({"Retry-After": "17", "X-RateLimit-Remaining-Minute": "0"})
    html = error_from_response(
        "GET", "/p", 429, headers, b"<html><title>API rate limit exceeded</title></html>", now=100.0
    )
    assert isinstance(html, errors.RateLimitedError)
    assert html.message == "API rate limit exceeded"
    assert html.retry_after == 17.0
    assert html.reset_at == 117.0
    assert html.rate_limit["x-ratelimit-remaining-minute"] == "0"
    assert not html.bodyless
    empty = error_from_response("POST", "/v3/hotspots", 429, headers, b"", now=0.0)
    assert isinstance(empty, errors.RateLimitedError)
    assert empty.bodyless
    assert empty.message == "Too Many Requests"
    garbage = error_from_response("GET", "/p", 500, make_headers(), b"{not json", now=0.0)
    assert garbage.message == "Internal Server Error"
