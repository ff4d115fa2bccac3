"""Per-page selection: the fast path agrees with the record-by-record reference."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncwifi.backfill._records import (
    Boundaries,
    date_key,
    select_general,
    select_page,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BOUNDARY = T0 + timedelta(seconds=50)


def text(seconds: int, shape: int) -> object:
    moment = T0 + timedelta(seconds=seconds)
    if shape == 0:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if shape == 1:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "250Z"
    if shape == 2:
        return moment.isoformat()  # +00:00: parsed, not compared as text
    return None  # no date


@settings(max_examples=300, deadline=None)
@given(
    # times around the boundary at 50 s (its margin is 49..51 s) come often
    records=st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 100) | st.sampled_from([48, 49, 50, 51])),
        max_size=40,
    ),
    shape=st.sampled_from([0, 0, 1, 1, 2, 3]),
    mixed=st.booleans(),
    seen=st.sets(st.integers(0, 30), max_size=5),
    cursor_at=st.none() | st.integers(0, 100),
    ordered=st.booleans(),
    with_boundary=st.booleans(),
    in_time_order=st.booleans(),
)
def test_fast_path_matches_the_reference(
    records: list[tuple[int, int]],
    shape: int,
    mixed: bool,
    seen: set[int],
    cursor_at: int | None,
    ordered: bool,
    with_boundary: bool,
    in_time_order: bool,
) -> None:
    if in_time_order:  # as the server sends them (sortBy=utcTime)
        records = sorted(records, key=lambda r: r[1])
    ids = [f"id-{i}" for i, _ in records]
    dates = [text(t, (shape + k) % 4 if mixed else shape) for k, (_, t) in enumerate(records)]
    raws = [f'{{"id":"{i}"}}'.encode() for i in ids]
    cursor = None if cursor_at is None else date_key(text(cursor_at, 0))
    kw = {
        "seen": {f"id-{i}" for i in seen},
        "boundaries": Boundaries.around([BOUNDARY]) if with_boundary else Boundaries(),
        "cursor": cursor,
        "ordered": ordered,
    }
    fast = select_page(ids, dates, raws, **kw)  # type: ignore[arg-type]
    slow = select_general(ids, dates, raws, **kw)  # type: ignore[arg-type]
    assert fast == slow


def test_date_keys_sort_like_time() -> None:
    keys = [
        date_key("2026-01-01T00:00:00Z"),
        date_key("2026-01-01T00:00:00.001Z"),
        date_key("2026-01-01T01:00:00.500+01:00"),
    ]
    assert None not in keys
    assert keys == sorted(keys)  # type: ignore[type-var]
    assert len(set(keys)) == 3
    assert date_key("not a date") is None
    assert date_key(17) is None


def test_records_within_a_second_of_a_boundary_are_marked_both_edges_included() -> None:
    seconds = [47, 48, 49, 50, 51, 52, 53]
    ids = [f"id-{t}" for t in seconds]
    dates = [text(t, 0) for t in seconds]
    raws = [i.encode() for i in ids]
    kw = {
        "seen": set(),
        "boundaries": Boundaries.around([BOUNDARY]),
        "cursor": None,
        "ordered": True,
    }
    fast = select_page(ids, dates, raws, **kw)  # type: ignore[arg-type]
    assert fast.boundary_ids == ["id-49", "id-50", "id-51"]
    assert fast == select_general(ids, dates, raws, **kw)  # type: ignore[arg-type]
