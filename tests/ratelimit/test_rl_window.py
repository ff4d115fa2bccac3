"""The sans-I/O window log (with its tags); its own operations and the projection checked
exactly (times near ``START`` = 1.7e9: ``pytest.approx``'s default relative tolerance would
allow ±1,700 s)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncwifi.ratelimit import Limit, Limits, MemoryStore
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log
from tests.ratelimit.rlhelpers import (
    START,
    admit,
    done,
    earliest,
    max_in_fixed,
    max_in_sliding,
    memory,
)


def window(name: str, count: int, span: float, *, paced: bool = False) -> WindowSpec:
    """A window of ``count`` in any ``span`` (no margin)."""
    return WindowSpec(name, count, span, 0.0, paced=paced)


class TestWindowLog:
    def test_burst_then_exact_wait(self) -> None:
        log = Log([window("minute", 3, 61.0)])
        for _ in range(3):
            assert max(earliest(log)[0], START) == START
            log.record(START, "x")
        assert earliest(log) == (START + 61.0, "minute")
        assert log.used(START + 61.0, 61.0) == 0

    def test_paced_spacing(self) -> None:
        log = Log([window("minute", 60, 60.0, paced=True)])
        log.record(START, "x")
        assert earliest(log)[0] == pytest.approx(START + 1.0)

    def test_clock_stepping_back_keeps_the_log_sorted(self) -> None:
        store = memory(Limits(minute=Limit(5, 60.0), day=None))
        assert admit(store, START + 10) == START + 10
        assert admit(store, START) == START + 10  # logged no earlier than the last one
        store.refund(START + 10, "x")
        assert store.log.used(START + 10, 61.0) == 1

    @settings(max_examples=150, deadline=None)
    @given(
        count=st.integers(1, 8),
        period=st.sampled_from([0.6, 1.0, 60.0]),
        margin=st.sampled_from([0.0, 0.01, 1.0]),
        gaps=st.lists(st.floats(0, 2.0, allow_nan=False), min_size=1, max_size=200),
        paced=st.booleans(),
    )
    def test_never_more_than_count_in_any_window(
        self, count: int, period: float, margin: float, gaps: list[float], paced: bool
    ) -> None:
        """Sans-I/O: admit whenever allowed at random attempt times; check every window."""
        store = memory(Limits(minute=Limit(count, period), day=None, minute_margin=margin))
        store.configure("minute", paced=paced)
        span = period + margin * min(1.0, period / 60.0)
        t, admitted = START, []
        for g in gaps:
            t += g
            free = earliest(store.log)[0]
            got = admit(store, t)
            assert (got is not None) == (free <= t)
            if got is not None:
                admitted.append(got)
        assert max_in_sliding(admitted, span) <= count
        assert max_in_sliding(admitted, period) <= count
        assert max_in_fixed(admitted, period) <= count

    @settings(max_examples=60, deadline=None)
    @given(count=st.integers(1, 6), k=st.integers(1, 20), paced=st.booleans())
    def test_projection_matches_greedy_admission(self, count: int, k: int, paced: bool) -> None:
        store = memory(Limits(minute=Limit(count, 10.0), day=Limit(count * 2, 100.0)))
        store.configure("minute", paced=paced)
        admit(store, START)
        predicted = store.log.project(START, k)
        got = []
        for _ in range(k):
            t = max(predicted[len(got)] if got else START, earliest(store.log)[0])
            assert admit(store, t) is not None
            got.append(t)
        assert got == pytest.approx(predicted)

    def test_tags_are_counted_per_window(self) -> None:
        store = memory(Limits(minute=Limit(5, 60.0), day=Limit(100, 86_400.0)))
        for t, tag in [(START, "events"), (START + 1, "login"), (START + 70, "events")]:
            assert admit(store, t, tag) is not None
        assert done(store.tally(START + 70, "minute")) == {"events": 1}
        assert done(store.tally(START + 70, "day")) == {"events": 2, "login": 1}
        store.refund(START + 1, "login")
        assert done(store.tally(START + 70, "day")) == {"events": 2}


# -- the log's own operations and the projection, exactly ------------------------------------------


def exact(values: list[float]) -> object:
    return pytest.approx(values, rel=0, abs=1e-6)


def minute_log(count: int = 5, span: float = 60.0) -> Log:
    return Log([WindowSpec("minute", count, span, 0.0)])


def test_a_clock_stepping_back_logs_at_the_newest_time() -> None:
    log = minute_log()
    for t in (START, START + 10, START + 20):
        assert log.record(t, "x") == t
    assert log.record(START + 5, "x") == START + 20  # never before the newest: sorted
    assert list(log.times) == [START, START + 10, START + 20, START + 20]
    assert log.times[-1] == START + 20


def test_remove_says_whether_the_admission_was_there() -> None:
    log = minute_log()
    log.record(START, "a")
    log.record(START + 1, "b")
    assert log.remove(START + 1, "a") is False  # another tag's admission: not this one
    assert log.remove(START + 1, "b") is True
    assert log.remove(START + 1, "b") is False  # already refunded
    assert log.remove(START + 99, "a") is False
    assert list(log.times) == [START]
    assert list(log.tags) == ["a"]


def test_the_log_keeps_what_the_longest_window_needs_and_no_more() -> None:
    log = Log([WindowSpec("minute", 3, 60.0, 0.0), WindowSpec("hour", 100, 3600.0, 0.0)])
    for t in (START, START + 10, START + 20, START + 30):
        log.record(t, "x")
    # the minute waits for its 3rd most recent admission, the one at START + 10
    assert earliest(log) == (START + 70, "minute")
    log.record(START + 3600, "x")  # START itself left the hour: forgotten
    assert list(log.times) == [START + 10, START + 20, START + 30, START + 3600]
    assert log.used(START + 3600, 3600.0) == 4
    assert log.used(START + 3600, 60.0) == 1


def test_the_reprs_show_the_log_and_the_mode() -> None:
    log = Log([WindowSpec("minute", 3, 60.0, 1.0), WindowSpec("day", 15_000, 86_400.0, 60.0)])
    assert repr(log) == "<Log minute 0/3 in 61s, day 0/15000 in 86460s>"
    log.specs[1].paced = True
    log.record(START, "x")
    assert repr(log) == "<Log minute 1/3 in 61s, day 1/15000 in 86460s paced>"
    store = MemoryStore()
    assert repr(store) == "MemoryStore(<Log >)"


def test_an_unknown_window_is_named_in_the_error() -> None:
    store = memory(Limits())
    with pytest.raises(KeyError, match="hour"):
        store.configure("hour", paced=True)


def test_the_log_names_no_window_when_one_may_go_now() -> None:
    store = memory(Limits(minute=Limit(2, 60.0), day=None, minute_margin=0))
    log = store.log
    assert earliest(log) == (-math.inf, "")
    admit(store, START)
    assert earliest(log)[1] == ""
    admit(store, START)
    assert earliest(log) == (START + 60.0, "minute")
    assert admit(store, START + 60.0) is not None


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
    limits = Limits(
        minute=Limit(minute_count, minute_period),
        day=Limit(day_count, day_period),
        minute_margin=0,
        day_margin=0,
    )
    store = memory(limits)
    store.configure("minute", paced=paced[0])
    store.configure("day", paced=paced[1])
    t = START
    for step in steps:  # admissions made on the key so far (a negative step: clock back)
        t += step
        store.note(t, "x", None)
    now = t - back
    predicted = store.log.project(now, k)
    greedy: list[float] = []
    at = now
    for _ in range(k):
        at = max(at, earliest(store.log)[0])
        assert admit(store, at) is not None
        greedy.append(at)
    assert greedy == exact(predicted)
