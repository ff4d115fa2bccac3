"""Hotspot deletions from the tombstones (issue 41; spec §4.3's ``deleted=true`` list), on
SQLite and PostgreSQL: a hotspot deleted upstream is marked deleted at the next refresh of
changes, not a whole read later; a server that answers ``deleted=true`` with live hotspots
is not trusted (nothing marked on its word, said once) and deletes wait for the whole read."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import ignore_deleted_filter, sim_client

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)
MONTH = 30 * 86_400.0


def later(sim: Any, seconds: float = 120.0) -> None:
    """Move the simulator's and the client's clock ahead at once: the next pass finds
    every read due (not only when the machine took a clock second between passes)."""
    sim.clock.start += seconds


def options() -> SyncOptions:
    # changes read at every pass, the whole list (which finds deletes too) a month apart
    return SyncOptions(
        since=SINCE, until=UNTIL, refresh_every=1, reconcile_every=MONTH,
        resources="hotspots",
    )  # fmt: skip


async def test_a_deleted_hotspot_is_marked_at_the_next_refresh(db_url: str) -> None:
    """Before: seen only at the hotspots' whole read (weekly to monthly by the plan)."""
    async with sim_client(events=10, contacts=5, hotspots=20) as (sim, api):
        store = open_destination(db_url)
        syncer = Syncer(api, store, options=options())
        try:
            await syncer.run_once()
            live = sorted(h["id"] for h in sim.data.hotspots.values() if not h["deleted"])
            sim.data.change_hotspot(live[0], sim.clock.now(), deleted=True)
            later(sim)
            await syncer.run_once()
            assert await store.ids("hotspots", deleted=True) == {live[0]}
            later(sim)
            assert await syncer.run_once() == 0  # read again: nothing more to write
        finally:
            await store.close()


async def test_a_server_that_ignores_the_filter_is_not_trusted(
    db_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ignore_deleted_filter(monkeypatch)
    async with sim_client(events=10, contacts=5, hotspots=20) as (sim, api):
        store = open_destination(db_url)
        syncer = Syncer(api, store, options=options())
        try:
            await syncer.run_once()
            live = sorted(h["id"] for h in sim.data.hotspots.values() if not h["deleted"])
            # a live hotspot changed today: the "tombstones" list shows it (a live one)
            sim.data.change_hotspot(live[1], sim.clock.now(), name="Renamed AP")
            with caplog.at_level(logging.WARNING, logger="asyncwifi.sync"):
                later(sim)
                await syncer.run_once()
                later(sim)
                await syncer.run_once()
            assert await store.ids("hotspots") == set(live)  # nothing retired on its word
            said = [r for r in caplog.records if "deleted=true" in r.getMessage()]
            assert len(said) == 1
        finally:
            await store.close()
