"""The window log's own operations and the projection, checked exactly (times near
``START`` = 1.7e9: ``pytest.approx``'s default relative tolerance would allow ±1,700 s)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncwifi.ratelimit import Limit, Limits, MemoryStore, WindowLog
from asyncwifi.ratelimit._window import Windows
from tests.ratelimit.rlhelpers import START


def exact(values: list[float]) -> object:
    return pytest.approx(values, rel=0, abs=1e-6)


def test_a_clock_stepping_back_logs_at_the_newest_time() -> None:
    w = WindowLog("minute", 5, 60.0)
    for t in (START, START + 10, START + 20):
        assert w.record(t) == t
    assert w.record(START + 5) == START + 20  # never before the newest: the log stays sorted
    assert list(w.times()) == [START, START + 10, START + 20, START + 20]
    assert w.newest() == START + 20


def test_remove_says_whether_the_admission_was_there() -> None:
    w = WindowLog("minute", 5, 60.0)
    assert w.newest() is None
    w.record(START)
    w.record(START + 1)
    assert w.remove(START + 1) is True
    assert w.remove(START + 1) is False  # already refunded
    assert w.remove(START + 99) is False
    assert list(w.times()) == [START]
    assert w.newest() == START


def test_extend_merges_admissions_made_elsewhere_sorted_and_bounded() -> None:
    w = WindowLog("minute", 3, 60.0)
    w.record(START + 10)
    w.extend([START + 30, START, START + 20])
    # only the newest ``count`` matter: the oldest kept is the one the window waits for
    assert list(w.times()) == [START + 10, START + 20, START + 30]
    assert w.next_free(START + 30) == START + 70
    w.record(START + 70)
    assert list(w.times()) == [START + 20, START + 30, START + 70]
    w.extend([])
    assert list(w.times()) == [START + 20, START + 30, START + 70]


def test_the_reprs_show_the_log_and_the_mode() -> None:
    minute = WindowLog("minute", 3, 61.0)
    assert minute.paced is False  # exact until told otherwise
    minute.record(START)
    day = WindowLog("day", 15_000, 86_460.0)
    day.paced = True
    assert repr(minute) == "<WindowLog minute 1/3 in 61s>"
    assert repr(day) == "<WindowLog day 0/15000 in 86460s paced>"
    assert repr(Windows([minute, day])) == f"Windows({minute!r}, {day!r})"
    assert repr(Windows()) == "Windows()"


def test_an_unknown_window_is_named_in_the_error() -> None:
    store = MemoryStore()
    store.bind(Limits().windows())
    with pytest.raises(KeyError, match="hour"):
        store.configure("hour", paced=True)


def test_next_free_names_no_window_when_one_may_go_now() -> None:
    store = MemoryStore()
    store.bind(Limits(minute=Limit(2, 60.0), day=None, minute_margin=0).windows())
    assert store.next_free(START) == (START, "")
    store.try_acquire(START)
    assert store.next_free(START) == (START, "")
    store.try_acquire(START)
    assert store.next_free(START) == (START + 60.0, "minute")
    assert store.next_free(START + 60.0) == (START + 60.0, "")


@settings(max_examples=200, deadline=None)
@given(
    minute_count=st.integers(1, 5),
    minute_period=st.sampled_from([1.0, 6.0, 10.0]),
    day_count=st.integers(1, 12),
    day_period=st.sampled_from([20.0, 60.0, 100.0]),
    paced=st.tuples(st.booleans(), st.booleans()),
    steps=st.lists(st.floats(-5.0, 8.0), max_size=20),
    back=st.floats(0.0, 10.0),
    k=st.integers(1, 15),
)
def test_the_projection_is_exactly_the_greedy_admissions(
    minute_count: int,
    minute_period: float,
    day_count: int,
    day_period: float,
    paced: tuple[bool, bool],
    steps: list[float],
    back: float,
    k: int,
) -> None:
    """``project`` predicts the times the next ``k`` admissions are allowed at, if each
    goes as early as allowed: after any history, a clock stepping back included."""
    store = MemoryStore()
    limits = Limits(
        minute=Limit(minute_count, minute_period),
        day=Limit(day_count, day_period),
        minute_margin=0,
        day_margin=0,
    )
    store.bind(limits.windows())
    store.configure("minute", paced=paced[0])
    store.configure("day", paced=paced[1])
    t = START
    for step in steps:  # admissions made on the key so far (a negative step: clock back)
        t += step
        store.force(t)
    now = t - back
    predicted = store.project(now, k)
    greedy: list[float] = []
    at = now
    for _ in range(k):
        at, _ = store.next_free(at)
        assert store.try_acquire(at) is not None
        greedy.append(at)
    assert greedy == exact(predicted)
