"""The scroll's decisions, sans-I/O: tables of page outcomes in, decisions out."""

from __future__ import annotations

import pytest

from asyncwifi._stream._machine import Cursor, PageOutcome, ScrollMachine, Step

C, E = Step.CONTINUE, Step.END
RT, RS, F = Step.RESUME_TIME, Step.RESUME_RESCAN, Step.FAIL


class Ev:
    def __init__(self, ident: str, when: str) -> None:
        self.id, self.when = ident, when


def machine(*, mode: str | None = "time", resumable: bool = True) -> ScrollMachine:
    cursor = Cursor.create(ordered=mode == "time", ids=mode == "ids")
    if mode == "time":
        cursor.choose_mode("2024-01-01T00:00:00Z")
        cursor.advance_time([Ev("a", "2024-01-01T00:00:00Z")], None, lambda e: e.when)
    return ScrollMachine(cursor, window=60.0, resumable=resumable)


def page(
    records: int,
    fresh: int | None = None,
    *,
    cont: bool = True,
    sid: bool = True,
    total=None,
    size: int | None = 100,
) -> PageOutcome:
    """A page outcome; ``size``: the page size asked for, when a short page proves the end
    (events; contacts: None)."""
    fresh = records if fresh is None else fresh
    return PageOutcome(records, fresh, cont, sid, 1.0, total, size)


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (page(100), C),  # a full page with an id: go on
        (page(99), E),  # a short page: the server ran out, no closing request
        (page(100, sid=False), E),  # no id: nothing to continue with
        (page(0, cont=False), E),  # a fresh query with nothing in it: no id involved
        (page(0), RT),  # empty after a full page: maybe an early expiry: settle it
    ],
)
def test_one_page_outcome_decides(outcome: PageOutcome, expected: Step) -> None:
    assert machine().after_page(outcome) is expected


@pytest.mark.parametrize(
    ("mode", "expected"), [("time", RT), ("ids", RS), (None, RS)], ids=["time", "ids", "none"]
)
def test_an_ambiguous_end_resumes_by_time_only_with_a_time_cursor(
    mode: str | None, expected: Step
) -> None:
    assert machine(mode=mode).after_page(page(0)) is expected


@pytest.mark.parametrize(
    ("delivered", "total", "expected"),
    [(40, 60, RS), (60, 60, E), (61, 60, E)],
)
def test_contacts_totals_tell_an_expiry_from_the_end(
    delivered: int, total: int, expected: Step
) -> None:
    m = machine(mode="ids")
    m.cursor.delivered = delivered
    assert m.after_page(page(0, total=total, size=None)) is expected


def test_an_expiry_that_may_not_be_resumed_fails() -> None:
    m = machine(mode="ids", resumable=False)
    m.cursor.delivered = 10
    assert m.after_page(page(0, total=60, size=None)) is F


@pytest.mark.parametrize(
    ("since_answer", "expected"), [(10.0, C), (60.0, C), (60.5, RT)], ids=["in", "edge", "dead"]
)
def test_a_continuation_due_past_the_window_resumes_without_a_request(
    since_answer: float, expected: Step
) -> None:
    assert machine().before_continuation(since_answer) is expected


#: (pages after each resume, decisions): a resume must deliver something new before the next
SEQUENCES = [
    # time cursor: the resumed query's first page is short: the end, proved in 1 request
    ([page(100), page(0), page(7, 0, cont=False)], [C, RT, E]),
    # early expiry at every continuation: progress on each fresh query, so it goes on
    (
        [page(100), page(0), page(100, 95, cont=False), page(0), page(30, 25, cont=False)],
        [C, RT, C, RT, E],
    ),
    # a resume that delivered nothing new before the next expiry: no loop, a failure
    ([page(100), page(0), page(100, 0, cont=False), page(0)], [C, RT, C, F]),
]


@pytest.mark.parametrize(("pages", "decisions"), SEQUENCES)
def test_sequences_never_loop(pages: list[PageOutcome], decisions: list[Step]) -> None:
    m = machine()
    assert [m.after_page(p) for p in pages] == decisions


def test_a_rescan_that_lived_through_continuations_and_agrees_is_the_end() -> None:
    m = machine(mode="ids")
    m.cursor.delivered = 200
    steps = [page(100, cont=False), page(100), page(0)]
    assert [m.after_page(p) for p in steps] == [C, C, RS]
    m.cursor.delivered = 200
    again = [page(100, 0, cont=False), page(100, 0), page(0)]
    assert [m.after_page(p) for p in again] == [C, C, E]


def test_a_rescan_whose_ids_never_lived_fails_loudly() -> None:
    m = machine(mode="ids")
    m.cursor.delivered = 100
    steps = [page(100, cont=False), page(0), page(100, 0, cont=False), page(0)]
    assert [m.after_page(p) for p in steps] == [C, RS, C, F]


def test_the_time_cursor_skips_only_ids_delivered_at_its_time() -> None:
    cursor = Cursor.create(ordered=True)
    t1, t2, t3 = (f"2024-01-01T00:00:0{i}.000Z" for i in (1, 2, 3))
    cursor.choose_mode(t1)
    assert cursor.mode == "time"
    items = [Ev("a", t1), Ev("b", t2), Ev("c", t2)]
    cursor.advance_time(items, None, lambda e: e.when)
    assert cursor.time == t2  # where a resume by time starts
    assert cursor.seen("b", t2)
    assert cursor.seen("c", t2)
    assert not cursor.seen("a", t1)  # before the cursor's time: a resume never meets it
    assert not cursor.seen("d", t2)
    assert not cursor.seen("e", t3)


def test_the_scroll_and_the_feeds_keep_the_one_cursor_type() -> None:
    from asyncwifi._cursor import TimeCursor

    cursor = Cursor.create(ordered=True)
    cursor.choose_mode("2024-01-01T00:00:00.000Z")
    cursor.advance_time([Ev("a", "2024-01-01T00:00:00.500Z")], None, lambda e: e.when)
    assert isinstance(cursor.position, TimeCursor)
    assert cursor.position.skip == {"a"}


def test_a_time_that_does_not_read_breaks_the_time_cursor_loudly() -> None:
    cursor = Cursor.create(ordered=True)
    cursor.choose_mode("2024-01-01T00:00:00.000Z")
    cursor.advance_time([Ev("a", "yesterday")], None, lambda e: e.when)
    assert cursor.mode == "broken"  # a resume then fails instead of guessing


def test_records_without_time_or_out_of_utc_order_keep_every_id() -> None:
    for ordered, first in ((True, None), (False, "t1")):
        cursor = Cursor.create(ordered=ordered)
        cursor.choose_mode(first)
        assert cursor.mode == "ids"
        cursor.add_ids(["x", "y", None])
        assert cursor.seen("x", None)
        assert not cursor.seen("z", None)


def test_a_rescan_page_is_checked_at_once_unless_an_id_is_missing_or_repeated() -> None:
    cursor = Cursor.create(ordered=False, ids=True)
    cursor.add_ids(["a", "b"])
    assert cursor.fresh(["a", "c", "b", "d"]) == [1, 3]
    assert cursor.delivered == 2
    assert cursor.fresh(["e"]) is None  # all fresh
    assert cursor.fresh(["a", None]) is False  # no id: the careful path decides
    assert cursor.fresh(["f", "f"]) is False  # a repeat inside the page: the careful path
    assert not cursor.seen("f", None)
