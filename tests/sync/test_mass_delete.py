"""The mass-delete guard (issue 41), on SQLite and PostgreSQL: an empty segment list and a
hotspot list missing 60 % retire nothing and say so (a line, the stats the metrics and
``/healthz`` read); the next honest read applies real deletes; ``allow_mass_delete``
accepts one mass delete."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from asyncwifi.engine import open_destination
from asyncwifi.errors import ValidationError
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._metrics import SyncMetrics
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import sim_client
from tests.sync.test_sync_pass import rows

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)


def later(sim: Any, seconds: float = 120.0) -> None:
    """Move the simulator's and the client's clock ahead at once: the next pass finds
    every read due (not only when the machine took a clock second between passes)."""
    sim.clock.start += seconds


def options(**more: object) -> SyncOptions:
    every = {"reconcile_every": 0, "refresh_every": 1}
    return SyncOptions(since=SINCE, until=UNTIL, **every, **more)  # type: ignore[arg-type]


async def test_an_empty_or_short_answer_retires_nothing_and_says_so(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with sim_client(events=50, contacts=20, hotspots=30, segments=20) as (sim, api):
        store = open_destination(db_url)
        syncer = Syncer(api, store, options=options())
        try:
            await syncer.run_once()
            data = sim.data
            segments = list(data.segments)
            live = {h["id"] for h in data.hotspots.values() if not h["deleted"]}
            assert len(await store.ids("segments")) == 20
            data.segments.clear()  # an empty 200
            hidden = sorted(live)[: len(live) * 6 // 10]  # 60 % missing from the list
            for hid in hidden:
                data.hotspots[hid]["deleted"] = True
            data.hotspots[sorted(live)[-1]]["name"] = "Renamed AP"  # an upsert still applies
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="asyncwifi.sync"):
                later(sim)
                await syncer.run_once()
            assert await store.ids("segments", deleted=True) == set()
            assert len(await store.ids("segments")) == 20
            assert await store.ids("hotspots", deleted=True) == set()
            assert await store.ids("hotspots") == live
            assert syncer.stats.withheld_deletes == {"segments": 20, "hotspots": len(hidden)}
            said = [r.getMessage() for r in caplog.records if "mass-delete" in r.getMessage()]
            assert len(said) == 2
            assert any("segments would retire 20" in s for s in said)
            # the upsert applied with the deletes withheld
            assert any("Renamed AP" in s for s in await raws(db_url))
            health, text = await served(api, syncer)
            assert health == (503, {"status": "degraded",
                                    "reason": f"mass deletes withheld: {len(hidden)} of "
                                    "hotspots, 20 of segments"})  # fmt: skip
            assert 'asyncwifi_sync_withheld_deletes{table="segments"} 20.0' in text

            # the next honest answer: the segments back, one hotspot really gone
            data.segments.extend(segments)
            for hid in hidden:
                data.hotspots[hid]["deleted"] = False
            data.hotspots[hidden[0]]["deleted"] = True
            later(sim)
            await syncer.run_once()
            assert syncer.stats.withheld_deletes == {}
            assert (await served(api, syncer))[0][0] == 200
            assert await store.ids("hotspots", deleted=True) == {hidden[0]}
            assert await store.ids("segments", deleted=True) == set()

            # still 60 % gone, and accepted once: applied
            for hid in hidden:
                data.hotspots[hid]["deleted"] = True
            allowed = Syncer(api, store, options=options(allow_mass_delete=True))
            later(sim)
            await allowed.run_once()
            assert await store.ids("hotspots", deleted=True) == set(hidden)
            assert allowed.stats.withheld_deletes == {}
        finally:
            await store.close()


async def raws(url: str) -> list[str]:
    """The hotspots' stored ``raw``, read with the database's own driver."""
    return [r[0] for r in await rows(url, "SELECT raw FROM hotspots")]


async def served(api: object, syncer: Syncer) -> tuple[tuple[int, object], str]:
    """``/healthz`` (status, body) and ``/metrics`` of the syncer."""
    metrics = SyncMetrics(api, syncer)  # type: ignore[arg-type]
    port = await metrics.start(0)
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                health = (resp.status, await resp.json())
            async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                text = await resp.text()
    finally:
        await metrics.stop()
    return health, text


async def test_a_mass_delete_is_accepted_once(db_url: str) -> None:
    async with sim_client(events=20, contacts=5, hotspots=3, segments=30) as (sim, api):
        store = open_destination(db_url)
        syncer = Syncer(api, store, options=options(allow_mass_delete=True))
        try:
            await syncer.run_once()
            data = sim.data
            data.segments[:] = data.segments[12:]  # 12 of 30: more than max(10, 3)
            later(sim)
            await syncer.run_once()
            assert len(await store.ids("segments", deleted=True)) == 12
            data.segments[:] = data.segments[:1]  # 17 of 18 live: the allowance is spent
            later(sim)
            await syncer.run_once()
            assert syncer.stats.withheld_deletes == {"segments": 17}
            assert len(await store.ids("segments", deleted=True)) == 12
        finally:
            await store.close()


def test_thresholds_are_checked() -> None:
    with pytest.raises(ValidationError, match="mass_delete_share"):
        options(mass_delete_share=2)
    with pytest.raises(ValidationError, match="mass_delete_rows"):
        options(mass_delete_rows=-1)
