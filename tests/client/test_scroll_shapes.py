"""Event streams on every record shape, over real HTTP against the simulator in scaled time:
slow consumers spill instead of lapsing, lapses resume exactly once, early-expiring ids are
caught (issue 13; observed.md)."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import tempfile
from collections import Counter
from typing import Any

import pytest

from asyncwifi import ScaledClock, StreamOptions, errors
from tests.client._support import NO_LIMITS, client_for, scroll_tasks, stop_consumer

#: 90 clock seconds (1.5 windows) = 0.225 s
FAST = 400.0
#: the shapes a behaviour test runs on; "dated" only where it costs nothing
SHAPES = ("nested", "flat")
ALL_SHAPES = ("nested", "flat", "dated")


def spill_files() -> int:
    """Open files of this process that are anonymous temporary files (spill files)."""
    count = 0
    tmp = tempfile.gettempdir()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(tmp) and ("(deleted)" in target or "/#" in target):
            count += 1
    return count


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_consumer_slower_than_the_window_costs_no_extra_request(
    make_sim: Any, shape: str
) -> None:
    # 1,400 events in pages of 250: 5 full pages and a short one (the proved end). Half
    # the FAST speed: this test asserts no lapse at all, so event-loop lag on a loaded
    # machine must stay well inside the keep-alive's half window (30 clock s = 150 ms)
    make = make_sim(events=1_400, clock=ScaledClock(FAST / 2), event_shape=shape)
    async with make as sim, client_for(sim) as api:
        stream = api.events.list(size=250, options=StreamOptions(max_buffered=2))
        seen: list[str | None] = []
        async for page in stream.pages():
            seen.extend(e.id for e in page.items)
            await sim.clock.sleep(90.0)  # 1.5 windows per page
        assert Counter(seen) == Counter(sim.data.event_ids())
        assert len(seen) == len(set(seen)) == 1_400
        assert stream.requests == 6  # one per page: the spill file absorbed the delay
        assert stream.resumes == stream.resume_requests == 0
        assert sim.counters.expired_scroll_hits == 0
        assert stream.pages_spilled > 0


@pytest.mark.parametrize("shape", SHAPES)
async def test_past_the_disk_budget_a_lapse_is_resumed_exactly_once(
    make_sim: Any, shape: str
) -> None:
    make = make_sim(events=4_900, clock=ScaledClock(FAST), event_shape=shape)
    async with make as sim, client_for(sim) as api:
        stream = api.events.list(size=250, options=StreamOptions(max_buffered=2, spill_budget=0))
        seen: list[str | None] = []
        async for page in stream.pages():
            seen.extend(e.id for e in page.items)
            await sim.clock.sleep(90.0)
        assert Counter(seen) == Counter(sim.data.event_ids())
        assert len(seen) == len(set(seen)) == 4_900
        assert stream.resumes >= 1
        assert stream.pages_spilled == 0
        # a dead id is not asked again (but for one sent just before the window closed)
        assert sim.counters.expired_scroll_hits <= stream.resumes
        if shape == "nested":
            # a time cursor: each resume costs its fresh query's pages, nothing re-read
            assert stream.requests <= 20 + stream.resumes
        else:
            # no time on the records: a resume re-scans what was delivered, 10,000 a page
            # (here one page holds every event), so it costs no more than a time cursor
            assert stream.requests <= 20 + stream.resumes


@pytest.mark.parametrize(
    ("shape", "events"),
    [("nested", 2_000), ("dated", 2_000), ("flat", 2_000), ("flat", 12_000)],
)
async def test_ids_expiring_after_a_millisecond_deliver_everything_or_fail_loudly(
    make_sim: Any, shape: str, events: int
) -> None:
    make = make_sim(events=events, clock=ScaledClock(FAST), event_shape=shape, scroll_ttl=0.001)
    async with make as sim, client_for(sim, limits=NO_LIMITS) as api:
        stream = api.events.list(size=300)
        seen: list[str | None] = []

        async def consume() -> None:
            async for page in stream.pages():
                seen.extend(e.id for e in page.items)

        if shape == "flat" and events > 10_000:
            # no time to resume from, more than one page of 10,000 to re-scan, and every
            # id dies at once: no re-scan can get past its first page: say so
            with pytest.raises(errors.ScrollExpiredError, match="no progress"):
                await consume()
            assert len(seen) == len(set(seen)) == 10_000
        else:
            await consume()
            assert Counter(seen) == Counter(sim.data.event_ids())
            assert sim.counters.expired_scroll_hits >= 1
            if shape == "flat":
                # the re-scan asks for 10,000 a page: one short page, the rest and the end
                assert stream.requests == 3
            else:
                # one continuation lost and one fresh query per page, nothing more
                assert stream.requests <= 2 * (-(-events // 300)) + 1
        assert not scroll_tasks()


@pytest.mark.parametrize("shape", ALL_SHAPES)
async def test_a_last_full_page_then_an_empty_one_is_proved_the_end(
    make_sim: Any, shape: str
) -> None:
    # 1,500 events in pages of 300: the empty continuation may be an early expiry
    async with make_sim(events=1_500, event_shape=shape) as sim, client_for(sim) as api:
        stream = api.events.list(size=300)
        seen = [e.id async for e in stream]
        assert Counter(seen) == Counter(sim.data.event_ids())
        assert stream.resumes == 1
        # the empty continuation, then one request proves the end: from the time cursor,
        # or (flat) a re-scan of 10,000 a page whose first page comes back short
        assert stream.resume_requests == 2
        assert stream.requests == 5 + 2


async def test_business_time_order_is_never_used_as_a_time_cursor(make_sim: Any) -> None:
    make = make_sim(events=2_000, clock=ScaledClock(FAST))
    async with make as sim, client_for(sim) as api:
        stream = api.events.list(
            size=250, sort_by="businessTime", options=StreamOptions(max_buffered=1, spill_budget=0)
        )
        seen: list[str | None] = []
        async for page in stream.pages():
            seen.extend(e.id for e in page.items)
            await sim.clock.sleep(90.0)
        assert Counter(seen) == Counter(sim.data.event_ids())
        assert stream.resumes >= 1
        # local time across zones is not UTC order: the order served is not the ids' order
        assert seen != sim.data.event_ids()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
@pytest.mark.parametrize("how", ["break", "cancel", "raise", "end"])
async def test_the_spill_file_is_gone_after_break_cancel_error_and_end(
    make_sim: Any, how: str
) -> None:
    before = spill_files()
    make = make_sim(events=3_000, clock=ScaledClock(FAST), rate_limit_mode="off")
    async with make as sim, client_for(sim, limits=NO_LIMITS) as api:
        stream = api.events.list(size=100, options=StreamOptions(max_buffered=1))
        spilled = asyncio.Event()

        async def consume() -> None:
            async for page in stream.pages():
                while how != "end" and stream.pages_spilled == 0:
                    await sim.clock.sleep(40.0)  # past the keep-alive: the next page spills
                if spill_files() > before:
                    spilled.set()
                if how == "break":
                    break
                if how == "raise":
                    raise RuntimeError("consumer failed")
                if how == "cancel":
                    await asyncio.sleep(10)
                assert page.items
                await sim.clock.sleep(40.0 if page.number < 4 else 0.0)

        await stop_consumer(how, consume, lambda: asyncio.wait_for(spilled.wait(), 10))
        assert stream.pages_spilled > 0
        assert spilled.is_set()
        gc.collect()
        for _ in range(3):
            await asyncio.sleep(0)
        assert spill_files() == before
        assert not scroll_tasks()


@pytest.mark.parametrize("shape", ALL_SHAPES)
async def test_a_key_decode_hands_out_each_events_id_and_time_and_its_whole_bytes(
    make_sim: Any, shape: str
) -> None:
    # what an export needs (the id, the time, the server's bytes), whatever else the record
    # holds: its sub-objects are not decoded, even a broken one (its bytes keep it)
    from asyncwifi.models import Event, EventKey, decode
    from asyncwifi.testing._api_events import patch_event

    make = make_sim(events=500, clock=ScaledClock(FAST), event_shape=shape)
    async with make as sim, client_for(sim, limits=NO_LIMITS) as api:
        events = sim.data.events
        patch_event(events, 7, visit="broken")
        keys = api.events.keys(size=100, options=StreamOptions(keep_raw=True))
        got = [record async for record in keys.records()]
        assert keys.errors == []  # the broken visit is not read
        assert {type(r.item) for r in got} == {EventKey}
        assert sorted(bytes(r.raw or b"") for r in got) == sorted(
            events.event_json(i) for i in range(500)
        )
        for record in got:
            raw = bytes(record.raw or b"")
            if raw == events.event_json(7):
                assert record.item.id == events.event_id(7)
                continue
            whole = decode(raw, Event)  # the full decode names it alike
            assert (record.item.id, record.item.type, record.item.time) == (
                whole.id, whole.type, whole.time,
            )  # fmt: skip
        full = api.events.list(size=100)
        assert len([e async for e in full]) == 499  # the full decode sets the broken one aside
        assert full.errors[0].id == events.event_id(7)
        # what a stream decodes is chosen by the method (list, keys): a choice that is not
        # one of them (decode= is gone) is refused before any request, as options are
        with pytest.raises(errors.ValidationError, match="options must be"):
            api.events.list(options="everything")  # type: ignore[arg-type]
