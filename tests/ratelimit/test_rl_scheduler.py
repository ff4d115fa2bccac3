"""The scheduler's behaviour in virtual time: order, priorities, server truth, quotas."""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from asyncwifi.errors import ClientStateError, QuotaExhaustedError, ValidationError
from asyncwifi.ratelimit import (
    Lane,
    Limit,
    Limits,
    MemoryStore,
    Scheduler,
    ThrottleEvent,
)
from tests._virtualclock import VirtualClock
from tests.ratelimit.rlhelpers import START, FakeGateway, max_in_fixed, max_in_sliding

DAY0 = 1_700_006_400.0  # 2023-11-15 00:00:00 UTC, 6,400 s after START


def run(clock: VirtualClock, fn: Callable[[], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        return await fn()

    return clock.run(main())


def limits(n: int = 60, period: float = 60.0, day: int | None = None, **kw: Any) -> Limits:
    return Limits(minute=Limit(n, period), day=Limit(day, 86_400.0) if day else None, **kw)


async def take(s: Scheduler, out: list[Any], tag: Any = None, hold: float = 0.0, **kw: Any) -> None:
    async with s.slot(**kw) as p:
        out.append((tag, p.sent_at))
        if hold:
            await s.clock.sleep(hold)


class TestAdmission:
    def test_burst_of_n_then_exactly_n_per_window(self) -> None:
        clock = VirtualClock(START)
        times: list[Any] = []

        async def main() -> None:
            async with Scheduler(Limits(max_in_flight=None), clock=clock) as s:
                await asyncio.gather(*(take(s, times) for _ in range(180)))

        run(clock, main)
        ts = [t for _, t in times]
        assert ts[:60] == [START] * 60  # a burst is allowed
        assert ts[60] == START + 61.0  # then the 1 s margin on top of the minute
        assert max_in_sliding(ts, 60.0) == 60
        assert max_in_sliding(ts, 61.0) == 60
        assert max_in_fixed(ts, 60.0) == 60
        assert max(ts) == START + 122.0

    def test_a_lone_request_never_waits(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(Limits(), clock=clock)
            await take(s, out)
            await clock.sleep(5)
            await take(s, out)
            await s.aclose()

        run(clock, main)
        assert [t for _, t in out] == [START, START + 5]

    def test_fifo_within_a_lane_and_no_jumping_the_queue(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def late(s: Scheduler) -> None:
            await clock.sleep(10.0)  # wakes exactly when room appears, before the queue's timer
            await take(s, out, "late")

        async def main() -> None:
            s = Scheduler(limits(1, 10.0), clock=clock)
            tasks = [asyncio.create_task(late(s))]
            await asyncio.sleep(0)
            for i in range(5):
                tasks.append(asyncio.create_task(take(s, out, i)))
            await asyncio.gather(*tasks)
            await s.aclose()

        run(clock, main)
        assert [tag for tag, _ in out] == [0, 1, 2, 3, 4, "late"]

    def test_a_newcomer_admitted_at_once_sends_after_those_granted_before_it(self) -> None:
        """A cold start's probe holds the next two back; its answer lets them go, and a
        caller arriving in that instant (room for all) must not send before them (the
        property test found [0, 3, 1, 2]: granted in order, resumed out of it)."""
        clock = VirtualClock(START)
        out: list[Any] = []

        gateway = FakeGateway(4, 1.0, sliding=False)

        async def one(s: Scheduler, i: int) -> None:
            async with s.slot(Lane.INTERACTIVE) as p:
                out.append((i, p.seq))
                await clock.sleep(0.0)
                p.observe(*gateway.arrive(clock.now()))  # the response: the gateway's headers
                await clock.sleep(0.0)

        async def main() -> None:
            day = Limit(100_000, 1e7)  # the limits of the example the property test found
            s = Scheduler(Limits(Limit(4, 1.0), day=day, minute_margin=0.5), clock=clock)
            tasks = []
            for i in range(4):
                await clock.sleep(0.0)
                tasks.append(asyncio.create_task(one(s, i)))
            await asyncio.gather(*tasks)
            await s.aclose()

        run(clock, main)
        assert [i for i, _ in out] == [0, 1, 2, 3]  # what was sent, in order
        assert [seq for _, seq in out] == sorted(seq for _, seq in out)  # and admitted so

    def test_lanes_order_simultaneous_waiters(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(limits(1, 1.0), clock=clock)
            await take(s, out, "first")
            order = [Lane.BULK, Lane.DEFAULT, Lane.SCROLL, Lane.INTERACTIVE, Lane.BULK]
            await asyncio.gather(
                *(take(s, out, (lane.name, i), lane=lane) for i, lane in enumerate(order))
            )
            await s.aclose()

        run(clock, main)
        assert [tag for tag, _ in out[1:]] == [
            ("INTERACTIVE", 3),
            ("SCROLL", 2),
            ("DEFAULT", 1),
            ("BULK", 0),
            ("BULK", 4),
        ]

    def test_bulk_is_not_starved_by_endless_interactive_traffic(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def flood(s: Scheduler) -> None:
            tasks = []
            for i in range(200):
                tasks.append(asyncio.create_task(take(s, out, ("i", i), lane=Lane.INTERACTIVE)))
                await clock.sleep(0.5)  # twice the rate the limit allows: a growing queue
            await asyncio.gather(*tasks)

        async def main() -> None:
            s = Scheduler(limits(1, 1.0, max_in_flight=None), clock=clock, aging=5.0)
            await take(s, out, "first")
            f = asyncio.create_task(flood(s))
            await clock.sleep(0.1)
            await take(s, out, "bulk", lane=Lane.BULK)
            await f
            await s.aclose()

        run(clock, main)
        tags = [tag for tag, _ in out[1:]]
        # BULK is three lanes below INTERACTIVE: it goes after the interactive requests that
        # arrived up to 3 * aging = 15 s after it (i <= 30 arrived at 0.5 i s) and before the
        # rest, though those keep coming faster than the limit allows
        assert tags.index("bulk") == 31
        assert tags[:31] == [("i", i) for i in range(31)]
        assert len(tags) == 201

    def test_deadlines_go_first_earliest_first(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(limits(1, 1.0), clock=clock)
            await take(s, out, "first")
            await asyncio.gather(
                take(s, out, "interactive", lane=Lane.INTERACTIVE),
                take(s, out, "d+50", deadline=START + 50),
                take(s, out, "d+20", deadline=START + 20, lane=Lane.BULK),
            )
            await s.aclose()

        run(clock, main)
        assert [tag for tag, _ in out] == ["first", "d+20", "d+50", "interactive"]

    def test_earliest_admission_in_a_lane_or_with_a_deadline(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(2, 10.0), clock=clock)
            assert s.earliest_admission() == START
            for _ in range(2):
                s.release(await s.acquire())
            span = 10.0 + 10.0 / 60.0
            assert s.earliest_admission() == pytest.approx(START + span)
            assert s.earliest_admission(deadline=START + 5.0) > START + 5.0
            assert s.earliest_admission(deadline=START + span) <= START + span
            # two deadline waiters ahead take the next window's two places
            waiters = [asyncio.create_task(s.acquire(deadline=START + 11 + i)) for i in range(2)]
            await asyncio.sleep(0)
            assert s.earliest_admission(deadline=START + 12.0) > START + 12.0
            assert s.earliest_admission(deadline=START + 2 * span + 1e-6) <= START + 2 * span + 1e-6
            assert s.earliest_admission(Lane.BULK) == pytest.approx(START + 2 * span)
            for w in waiters:
                s.release(await w)
            await s.aclose()

        run(clock, main)


class TestInFlightAndCancellation:
    def test_in_flight_bound_and_release_on_exit(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []
        peak = 0

        async def job(s: Scheduler, i: int) -> None:
            nonlocal peak
            async with s.slot() as p:
                out.append((i, p.sent_at))
                peak = max(peak, s.in_flight)
                await clock.sleep(5.0)

        async def main() -> None:
            s = Scheduler(Limits(max_in_flight=3), clock=clock)
            await asyncio.gather(*(job(s, i) for i in range(9)))
            assert s.in_flight == 0
            await s.aclose()

        run(clock, main)
        assert peak == 3
        # a cold start: the first goes alone until its answer (none here: its end, at 5)
        assert [t - START for _, t in out] == [0, 5, 5, 5, 10, 10, 10, 15, 15]
        assert [i for i, _ in out] == list(range(9))

    def test_cancelled_waiter_frees_its_place(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            store = MemoryStore()
            s = Scheduler(limits(1, 10.0, day=1000), clock=clock, store=store)
            await take(s, out, 0)
            tasks = [asyncio.create_task(take(s, out, i)) for i in (1, 2, 3)]
            await clock.sleep(1.0)
            tasks[0].cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            assert store.log.used(clock.now(), 86_460.0) == len(out) == 3
            await s.aclose()

        run(clock, main)
        assert [tag for tag, _ in out] == [0, 2, 3]
        assert out[1][1] == START + 10.0 + 10.0 / 60.0  # 2 took 1's place at once

    def test_cancelled_right_after_its_grant_gives_the_slot_back(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            store = MemoryStore()
            s = Scheduler(limits(60, 60.0, day=1000, max_in_flight=1), clock=clock, store=store)
            holder = await s.acquire()
            b = asyncio.create_task(take(s, out, "b"))
            c = asyncio.create_task(take(s, out, "c"))
            await asyncio.sleep(0)
            s.release(holder)  # hands the slot to b synchronously...
            b.cancel()  # ...and b is cancelled before it ever resumes
            await asyncio.gather(b, c, return_exceptions=True)
            assert b.cancelled()
            assert s.in_flight == 0
            # b's admission was refunded: only the holder and c are in the log
            assert store.log.used(clock.now(), 86_460.0) == 2
            await s.aclose()

        run(clock, main)
        assert [tag for tag, _ in out] == ["c"]

    def test_refund_gives_the_admission_back(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(1, 10.0), clock=clock)
            async with s.slot() as p:
                p.refund()  # e.g. the connection was refused before anything was sent
            async with s.slot() as p2:
                assert p2.sent_at == START
            await s.aclose()

        run(clock, main)

    def test_a_plain_admission_is_a_number_and_leaves_nothing_for_the_collector(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(10_000, 60.0, max_in_flight=None), clock=clock)
            gc.collect()
            before = len(gc.get_objects())
            held = [await s.acquire() for _ in range(2_000)]
            grown = len(gc.get_objects()) - before
            assert all(type(n) is int for n in held)
            assert len(set(held)) == 2_000
            assert grown < 100  # no object per admission the collector would walk
            assert s.in_flight == 2_000
            assert s.sent_at(held[0]) == START
            s.refund(held[0])  # given back and ended: a second release changes nothing
            s.release(held[0])
            for n in held[1:]:
                s.release(n)
                s.release(n)
            assert s.in_flight == 0
            assert s.quota.admitted == 1_999
            await s.aclose()

        run(clock, main)

    def test_aclose_wakes_waiters_with_a_clear_error(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(1, 10.0), clock=clock)
            await s.acquire()
            waiter = asyncio.create_task(s.acquire())
            await asyncio.sleep(0)
            await s.aclose()
            with pytest.raises(ClientStateError, match="closed"):
                await waiter
            with pytest.raises(ClientStateError):
                await s.acquire()

        run(clock, main)

    def test_bad_arguments(self) -> None:
        with pytest.raises(ValidationError):
            Scheduler(Limits(on_exhausted="spin"))  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            Scheduler(Limits(max_in_flight=0))
        with pytest.raises(ValidationError):
            Scheduler(Limits(max_wait=-1))
        with pytest.raises(ValidationError):
            Scheduler().slot(deadline=float("nan"))


class TestServerTruth:
    def test_429_pauses_everyone_until_the_named_reset(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []
        events: list[ThrottleEvent] = []

        async def main() -> None:
            s = Scheduler(Limits(max_in_flight=None), clock=clock)
            s.on_throttle.append(events.append)
            async with s.slot() as p:
                await clock.sleep(0.5)
                p.observe(429, {"Retry-After": "3600", "X-RateLimit-Remaining-Minute": "0"})
            await asyncio.gather(*(take(s, out) for _ in range(5)))
            snap = s.quota
            assert snap.mode == "paced"
            await s.aclose()

        with caplog.at_level(logging.WARNING, logger="asyncwifi.ratelimit"):
            run(clock, main)
        assert all(t >= START + 0.5 + 3600 for _, t in out)
        assert {e.kind for e in events} >= {"pause", "paced"}
        assert "unexpected 429" in caplog.text
        assert "counts differently" in caplog.text

    def test_429_without_headers_waits_for_the_window_end_and_paces(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(Limits(max_in_flight=None), clock=clock)
            s.observe(429, {})
            assert s.quota.paused_until == START + 40.0  # START is :20 past a UTC minute
            await asyncio.gather(*(take(s, out) for _ in range(4)))
            await s.aclose()

        run(clock, main)
        ts = [t for _, t in out]
        assert ts[0] == START + 40.0
        # paced: evenly spaced span / N apart instead of a burst
        gaps = [b - a for a, b in itertools.pairwise(ts)]
        assert gaps == pytest.approx([61.0 / 60.0] * 3)

    def test_expected_429_does_not_switch_to_paced(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(Limits(), clock=clock)
            p = await s.acquire()
            s.observe(200, {"X-RateLimit-Remaining-Minute": "0"}, seq=p)  # another process
            assert s.sent_at(p) == START
            s.release(p)
            s.observe(429, {"Retry-After": "40"}, sent_at=START)
            assert s.quota.mode == "exact"
            assert s.quota.paused_until == START + 40
            await s.aclose()

        run(clock, main)

    def test_paced_mode_returns_to_exact_after_recovery(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(60, 60.0), clock=clock, paced_recovery=2.0)
            s.observe(429, {"Retry-After": "1"})
            assert s.quota.mode == "paced"
            await clock.sleep(121.0)
            async with s.slot():
                pass
            assert s.quota.mode == "exact"
            await s.aclose()

        run(clock, main)

    def test_remaining_lowers_the_estimate_only_within_the_window(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(limits(60, 60.0, max_in_flight=None), clock=clock)
            async with s.slot() as p:
                p.observe(200, {"X-RateLimit-Remaining-Minute": "2"})
            snap = s.quota.minute
            assert snap is not None
            assert (snap.remaining, snap.source) == (2, "server")
            await asyncio.gather(*(take(s, out) for _ in range(4)))
            # a later, higher figure never raises the estimate
            s.observe(200, {"X-RateLimit-Remaining-Minute": "50"}, sent_at=START)
            await s.aclose()

        run(clock, main)
        ts = [t for _, t in out]
        assert ts[:2] == [START, START]
        assert ts[2:] == [START + 40.0, START + 40.0]  # the next UTC minute

    def test_lower_server_limit_is_adopted(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(Limits(max_in_flight=None), clock=clock)
            async with s.slot() as p:
                p.observe(200, {"X-RateLimit-Limit-Minute": "10"})
            await asyncio.gather(*(take(s, out) for _ in range(30)))
            assert s.quota.minute is not None
            assert s.quota.minute.limit == 10
            await s.aclose()

        run(clock, main)
        assert max_in_sliding([START] + [t for _, t in out], 61.0) == 10

    def test_observe_without_permit_counts_later_admissions(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(60, 60.0, max_in_flight=None), clock=clock)
            for _ in range(3):
                s.release(await s.acquire())
            # the first of the three reports 1 left: the two sent after it used more than that
            s.observe(200, {"X-RateLimit-Remaining-Minute": "1"}, sent_at=START)
            assert s.quota.minute is not None
            assert s.quota.minute.remaining == 0
            await s.aclose()

        run(clock, main)

    def test_throttle_callback_errors_are_logged_not_raised(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        clock = VirtualClock(START)

        def boom(_: ThrottleEvent) -> None:
            raise RuntimeError("callback bug")

        async def main() -> None:
            s = Scheduler(Limits(), clock=clock)
            s.on_throttle.append(boom)
            s.observe(429, {"Retry-After": "1"})
            await s.aclose()

        run(clock, main)
        assert "on_throttle callback failed" in caplog.text


class TestQuotas:
    def test_day_spent_raise_mode_raises_at_once(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(60, 60.0, day=3, on_exhausted="raise"), clock=clock)
            for _ in range(3):
                s.release(await s.acquire())
            with pytest.raises(QuotaExhaustedError) as ei:
                await s.acquire()
            assert ei.value.reset_at == START + 86_400 + 60
            assert ei.value.limit == "day"
            assert clock.now() == START  # raised without waiting
            await s.aclose()

        run(clock, main)

    def test_day_spent_wait_mode_waits_for_the_reset(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(60, 60.0, day=3), clock=clock)
            for _ in range(3):
                s.release(await s.acquire())
            p = await s.acquire()
            assert s.sent_at(p) == START + 86_460
            await s.aclose()

        run(clock, main)

    def test_max_wait_bounds_the_wait(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(limits(60, 60.0, day=1, max_wait=3600.0), clock=clock)
            s.release(await s.acquire())
            with pytest.raises(QuotaExhaustedError):
                await s.acquire()
            await s.aclose()

        run(clock, main)

    def test_server_day_zero_waits_until_utc_midnight(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(Limits(max_in_flight=None), clock=clock)
            async with s.slot() as p:
                p.observe(
                    200, {"X-RateLimit-Remaining-Day": "0", "X-RateLimit-Remaining-Minute": "59"}
                )
            assert s.quota.day is not None
            assert s.quota.day.source == "server"
            p2 = await s.acquire()
            assert s.sent_at(p2) == DAY0  # the next 00:00 UTC
            await s.aclose()

        run(clock, main)

    def test_server_day_zero_with_reset_and_raise(self) -> None:
        clock = VirtualClock(START)

        async def main() -> None:
            s = Scheduler(Limits(on_exhausted="raise"), clock=clock)
            async with s.slot() as p:
                p.observe(
                    429,
                    {
                        "X-RateLimit-Remaining-Day": "0",
                        "X-RateLimit-Remaining-Minute": "58",
                        "Retry-After": "6400",
                    },
                )
            with pytest.raises(QuotaExhaustedError) as ei:
                await s.acquire()
            assert ei.value.reset_at == START + 6400
            assert s.quota.mode == "exact"  # a spent day is not a counting surprise
            await s.aclose()

        run(clock, main)

    def test_object_quota_blocks_only_requests_for_that_object(self) -> None:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(Limits(max_in_flight=None), clock=clock)
            async with s.slot(objects="hotspots") as p:
                p.observe(
                    429,
                    {
                        "X-RateLimit-Limit-Hotspots-Day": "5",
                        "X-RateLimit-Remaining-Hotspots-Day": "0",
                    },
                )
            assert s.quota.objects["hotspots"].remaining == 0
            blocked = asyncio.create_task(take(s, out, "hotspot", objects="Hotspots"))
            await asyncio.sleep(0)
            await take(s, out, "contact")  # not stuck behind the object waiter
            await blocked
            r = Scheduler(Limits(on_exhausted="raise"), clock=clock)
            r.observe(200, {"X-RateLimit-Remaining-Hotspots-Day": "0"})
            with pytest.raises(QuotaExhaustedError) as ei:
                await r.acquire(objects="hotspots")
            assert ei.value.limit == "hotspots"
            await r.aclose()
            await s.aclose()

        run(clock, main)
        assert out[0] == ("contact", START)
        assert out[1] == ("hotspot", DAY0)


class TestWholeDay:
    def test_a_simulated_day_of_15000_requests(self) -> None:
        """Two days of saturation with the production limits in virtual time."""
        clock = VirtualClock(START)
        sent: list[float] = []

        async def worker(s: Scheduler, n: int) -> None:
            for _ in range(n):
                async with s.slot() as p:
                    sent.append(p.sent_at)
                    await clock.sleep(0.3)  # a response takes 0.3 s

        async def main() -> None:
            s = Scheduler(Limits(max_in_flight=16), clock=clock)
            await asyncio.gather(*(worker(s, 30_000 // 16 + 1) for _ in range(16)))
            await s.aclose()

        run(clock, main)
        sent.sort()
        assert max_in_sliding(sent, 60.0) <= 60
        assert max_in_fixed(sent, 60.0) <= 60
        assert max_in_sliding(sent, 86_400.0) <= 15_000
        assert max_in_fixed(sent, 86_400.0) <= 15_000
        # saturation: the day binds, and each day's 15,000 are all used
        first_two_days = [t for t in sent if t < START + 2 * 86_460]
        assert len(first_two_days) >= 0.99 * 2 * 15_000
        assert sent[15_000] == START + 86_460


class TestSharing:
    def test_two_schedulers_on_one_memory_store_share_the_budget(self) -> None:
        clock = VirtualClock(START)
        sent: list[Any] = []

        async def main() -> None:
            store = MemoryStore()
            a = Scheduler(limits(5, 60.0, max_in_flight=None), clock=clock, store=store)
            b = Scheduler(limits(5, 60.0, max_in_flight=None), clock=clock, store=store)
            await asyncio.gather(*(take(a if i % 2 else b, sent) for i in range(20)))
            await a.aclose()  # the store stays usable for b
            await take(b, sent)
            await b.aclose()

        run(clock, main)
        ts = [t for _, t in sent]
        assert len(ts) == 21
        assert max_in_sliding(ts, 61.0) == 5

    def test_limits_may_be_disabled(self) -> None:
        clock = VirtualClock(START)
        sent: list[Any] = []

        async def main() -> None:
            s = Scheduler(Limits(minute=None, day=None, max_in_flight=None), clock=clock)
            await asyncio.gather(*(take(s, sent) for _ in range(500)))
            await s.aclose()

        run(clock, main)
        assert {t for _, t in sent} == {START}


def test_public_names_are_pinned() -> None:
    import asyncwifi.ratelimit as rl

    assert rl.__all__ == sorted(rl.__all__)
    assert set(rl.__all__) == {
        "Lane",
        "Limit",
        "Limits",
        "MemoryStore",
        "QuotaSnapshot",
        "RateStore",
        "RedisStore",
        "Scheduler",
        "ThrottleEvent",
    }
    assert [n for n in rl.__all__ if not hasattr(rl, n)] == []


def test_a_store_that_suspends_admits_alike() -> None:
    """The store is a plug-in, awaited on the one admission path: one that suspends in
    ``acquire`` (as a network store does) admits at the same times, FIFO within a lane
    (callers arriving while it decides queue, so the lanes order them)."""

    class Suspends(MemoryStore):
        async def acquire(self, now: float, tag: str, keepalive: Any = None) -> Any:
            await asyncio.sleep(0)
            return await super().acquire(now, tag, keepalive)

    def one_run(store: MemoryStore) -> list[Any]:
        clock = VirtualClock(START)
        out: list[Any] = []

        async def main() -> None:
            s = Scheduler(limits(5, 10.0, max_in_flight=3), clock=clock, store=store)
            lanes = itertools.cycle([Lane.BULK, Lane.DEFAULT, Lane.INTERACTIVE])
            await asyncio.gather(*(take(s, out, i, hold=0.5, lane=next(lanes)) for i in range(30)))
            await s.aclose()

        run(clock, main)
        return out

    plain, suspending = one_run(MemoryStore()), one_run(Suspends())
    assert [t for _, t in suspending] == [t for _, t in plain]
    for lane in range(3):
        assert [i for i, _ in suspending if i % 3 == lane] == list(range(lane, 30, 3))
    assert max_in_sliding([t for _, t in suspending], 10.0 + 10.0 / 60.0) == 5


def test_a_caller_refused_by_a_suspending_store_keeps_its_place_in_line() -> None:
    """A caller that asked the store (which suspended) and was refused queues where it
    arrived: before the callers that came while the store decided (FIFO within a lane)."""

    class Suspends(MemoryStore):
        async def acquire(self, now: float, tag: str, keepalive: Any = None) -> Any:
            for _ in range(3):  # a network store's round trip: others run meanwhile
                await asyncio.sleep(0)
            return await super().acquire(now, tag, keepalive)

    clock = VirtualClock(START)
    out: list[Any] = []

    async def main() -> None:
        s = Scheduler(limits(1, 10.0), clock=clock, store=Suspends())
        await take(s, out, "first")
        a = asyncio.create_task(take(s, out, "a"))  # asks the store, which suspends...
        await asyncio.sleep(0)
        b = asyncio.create_task(take(s, out, "b"))  # ...while b arrives and queues
        await asyncio.gather(a, b)
        await s.aclose()

    run(clock, main)
    assert [tag for tag, _ in out] == ["first", "a", "b"]
