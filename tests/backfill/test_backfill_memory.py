"""A backfill's memory is set by its concurrency, not by the events it moves (issue 43).

A page's body lives from the request that reads it to the commit of its lines; every
record of it is a view of that body. Against the simulator over HTTP, with a disk that
takes its time (pages would pile up behind the commits), the events served and not yet
written are counted at every response and every commit: at most the job's pages in memory
(``concurrency + 1``) and the one being read, however many pages the job moves. Before,
each slice held a page in hand, one committing and one fetched ahead, and the state file's
thread kept the last group it wrote: 15 pages at a concurrency of 4.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import ScaledClock
from asyncwifi.backfill import Reporter, events_backfill
from asyncwifi.engine import CopyOptions
from asyncwifi.testing import Simulator
from tests.backfill.test_backfill_shapes import ids_in
from tests.client._support import NO_LIMITS, client_for

SINCE = datetime(2026, 1, 1, tzinfo=UTC)
DAYS = 4


class InFlight(Reporter):
    """Events the simulator served and the job has not yet written, at every response and
    every commit: the records (and the bodies they are views of) the job holds."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.written = 0
        self.pages = 0
        self.most = 0

    def count(self) -> None:
        served = self.sim.counters.objects_served.get("events", 0)
        self.most = max(self.most, served - self.written)

    def page(self, progress: Any, *, slice_index: int, records: int) -> None:
        self.pages += 1
        self.written += records
        self.count()


@pytest.mark.parametrize(
    ("concurrency", "shape", "ttl"),
    [(1, "nested", 60.0), (4, "nested", 60.0), (4, "flat", 60.0), (4, "dated", 60.0),
     (4, "nested", 0.5)],
)  # fmt: skip
async def test_the_pages_alive_at_once_are_bounded_by_the_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int, shape: str, ttl: float
) -> None:
    # on every record shape ("flat" carries no time: the feed reads spans by ids), and with
    # scroll ids that expire early (half a clock second: scrolls lapse and resume from their
    # time cursor at the same size; a scroll without times re-scans in larger pages, whose
    # exactness is the shapes test's, tests/backfill/test_backfill_shapes.py)
    fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.01)  # a disk that takes its time: pages would queue behind it
        fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    sim = Simulator(
        clock=ScaledClock(40.0), events=12_000, events_start=SINCE,
        events_end=SINCE + timedelta(days=DAYS), rate_limit_mode="off", event_shape=shape,
        scroll_ttl=ttl,
    )  # fmt: skip
    async with sim, client_for(sim, limits=NO_LIMITS) as api:
        reporter = InFlight(sim)
        api._api.hooks.on_response.append(lambda _info: reporter.count())
        out = tmp_path / "events.jsonl"
        job = events_backfill(
            api, since=SINCE, until=SINCE + timedelta(days=DAYS), out=out,
            state=tmp_path / "state", page_size=250, concurrency=concurrency,
            reporter=reporter,
        )  # fmt: skip
        outcome = await job.run()
    assert outcome.status == "done"
    assert ids_in(out) == Counter(sim.data.event_ids())  # every event once
    # about 48 pages moved (a page is a request that carried records: the progress line
    # once counted a span's closing checkpoint as one, "12 pages · 9 requests") ...
    assert 12_000 // 250 <= reporter.pages == outcome.progress.pages_run
    assert outcome.progress.pages_run <= outcome.progress.requests_run
    # ... and never more than the job's pages in memory (concurrency + 1) and the one
    # being read, read and not yet written
    assert reporter.most <= (concurrency + 2) * 250, reporter.most


async def test_a_stream_on_demand_sends_its_next_request_only_when_asked() -> None:
    sim = Simulator(clock=ScaledClock(40.0), events=1_000, rate_limit_mode="off")
    async with sim, client_for(sim, limits=NO_LIMITS) as api:
        from asyncwifi import StreamOptions

        stream = api.events.list(size=100, options=StreamOptions(keep_raw=True, prefetch=0))
        pages = stream.pages()
        await anext(pages)
        await anext(pages)  # past the small first page: the scroll at its full size
        asked = stream.requests
        for _ in range(20):  # the background task has every chance to read ahead: it does not
            await sim.clock.sleep(0.05)
        assert stream.requests == asked
        await anext(pages)
        assert stream.requests == asked + 1
        async for _page in pages:
            pass
        assert stream.delivered == 1_000
    with pytest.raises(Exception, match="prefetch"):
        StreamOptions(prefetch=-1)


def test_pages_in_memory_is_checked_when_the_options_are_made() -> None:
    with pytest.raises(Exception, match="pages_in_memory"):
        CopyOptions(pages_in_memory=0)
