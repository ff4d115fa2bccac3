"""The day's quota spent mid-sync: the sync says so, sleeps until the reset (00:00 UTC on
the gateway's clock) and finishes from its checkpoints, every event stored once."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi import Client, Limit, Limits, ScaledClock
from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START

MIDNIGHT = 1_767_225_600.0  # 2026-01-01T00:00:00Z


async def test_quota_spent_sleeps_until_the_reset_and_resumes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # a day of quota in about two real seconds; at that speed a scroll's minute is 1.5 ms,
    # so scroll ids are made long-lived (this test is about the day, not the scroll)
    clock = ScaledClock(40_000.0, start=MIDNIGHT - 40.0)
    async with Simulator(clock=clock, events=3_000, contacts=30, day_limit=5,
                         fractional_reset=True, scroll_ttl=1e9) as sim:  # fmt: skip
        limits = Limits(minute=Limit(60, 60.0), day=Limit(5, 86_400.0))
        async with Client(sim.client_key, sim.client_secret, base_url=sim.base_url,
                          organization=sim.organization, allow_http=True, clock=clock,
                          limits=replace(limits, on_exhausted="raise"),
                          scroll_window=1e9) as api:  # fmt: skip
            store = open_destination(f"sqlite:///{tmp_path / 'q.db'}")
            options = SyncOptions(
                since=datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC),
                until=datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC),
            )
            syncer = Syncer(api, store, options=options)
            with caplog.at_level(logging.WARNING, logger="asyncwifi.sync"):
                await syncer.run_once()
            try:
                assert syncer.stats.quota_sleeps >= 1
                assert "quota is spent; sleeping until" in caplog.text
                assert await store.ids("events") == set(sim.data.event_ids())
                assert await store.count("events") == 3_000
                assert clock.now() >= MIDNIGHT
                # it slept until the day was back, not once per freed request
                assert syncer.stats.quota_sleeps <= 3
                # the floor is 5 (the 3,000 events fit a page; contact changes and scan;
                # hotspots; segments), plus the first window's short page (a day, while
                # the feed does not know the records' shape) and, at most, the first
                # request of the step the quota cut, run again from its checkpoint
                assert sum(syncer.stats.requests.values()) <= 5 + 1 + 1
            finally:
                await store.close()
