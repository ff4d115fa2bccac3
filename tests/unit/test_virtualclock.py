"""The suite's one virtual clock (``tests/_virtualclock.py``): time that jumps when every task
waits, on its own loop, or that a test steps by hand on any loop."""

from __future__ import annotations

import asyncio

import pytest

from tests._virtualclock import DEFAULT_START as START
from tests._virtualclock import VirtualClock


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


class TestSteppingClock:
    async def test_it_moves_only_when_told_or_slept_on_and_lists_the_sleeps(self) -> None:
        clock = VirtualClock.stepping(START)
        assert clock.now() == START
        await clock.sleep(30.0)
        await clock.sleep(-5.0)  # a late deadline sleeps for nothing, but is listed
        clock.step(0.5)
        assert clock.now() == START + 30.5
        clock.set(START - 10.0)  # back, too
        assert clock.now() == START - 10.0
        assert clock.sleeps == [30.0, -5.0]

    async def test_a_sleep_lets_others_run(self) -> None:
        clock = VirtualClock.stepping(START)
        seen: list[str] = []

        async def other() -> None:
            seen.append("other")

        task = asyncio.create_task(other())
        await clock.sleep(1.0)
        assert seen == ["other"]
        await task

    def test_its_seconds_last_no_more_than_its_real(self) -> None:
        assert VirtualClock.stepping().real(60.0) == 0.0
        assert VirtualClock.stepping(real=0.001).real(60.0) == 0.001
        assert VirtualClock.stepping(real=0.001).real(-1.0) == 0.0
        assert VirtualClock().real(60.0) == 60.0

    def test_a_clock_that_runs_its_loop_is_not_set_by_hand(self) -> None:
        with pytest.raises(RuntimeError, match="stepping"):
            VirtualClock().set(START)
