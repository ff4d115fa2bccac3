"""The sans-I/O window log (with its tags) and the virtual clock it is tested with."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncwifi.ratelimit import Limit, Limits
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log
from tests._virtualclock import VirtualClock
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


class TestVirtualClock:
    def test_time_jumps_only_when_everyone_waits_and_lands_exactly(self) -> None:
        clock = VirtualClock(start=START)
        seen: list[tuple[str, float]] = []

        async def sleeper(name: str, d: float) -> None:
            await clock.sleep(d)
            seen.append((name, clock.now()))

        async def busy() -> None:
            for _ in range(100):
                await asyncio.sleep(0)
            seen.append(("busy", clock.now()))

        async def main() -> None:
            await asyncio.gather(sleeper("b", 2.5), sleeper("a", 1.0), busy(), sleeper("c", 2.5))

        clock.run(main())
        assert seen == [("busy", START), ("a", START + 1.0), ("b", START + 2.5), ("c", START + 2.5)]

    def test_a_day_passes_in_no_real_time(self) -> None:
        clock = VirtualClock(start=START)
        clock.run(clock.sleep(86_400.0 * 3))
        assert clock.now() == START + 86_400.0 * 3

    def test_cancelled_sleep_does_not_move_time(self) -> None:
        clock = VirtualClock(start=START)

        async def main() -> None:
            t = asyncio.create_task(clock.sleep(1000.0))
            await asyncio.sleep(0)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            await clock.sleep(1.0)

        clock.run(main())
        assert clock.now() == START + 1.0
        assert clock.pending() == 0

    def test_sleep_outside_its_loop_is_refused(self) -> None:
        clock = VirtualClock()
        with pytest.raises(RuntimeError, match=r"clock\.run"):
            asyncio.run(clock.sleep(1.0))
