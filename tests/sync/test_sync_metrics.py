"""The sync's metrics end to end: real 429s from the simulator's gateway counted on
``/metrics``, rows per table, requests, objects of the month and day by kind (the limiter's
``scheduler.objects()``), the allowance and the plan's projection, and ``Client.add_hook``
attached and removed."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from asyncwifi import Client, ScaledClock
from asyncwifi.engine import open_destination
from asyncwifi.errors import ConfigurationError
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._metrics import SyncMetrics
from asyncwifi.testing import Faults, Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START


def _sample(text: str, name: str, labels: str = "") -> float:
    """The value of ``name{labels}`` in a Prometheus text exposition."""
    match = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    assert match is not None, f"{name}{labels} not in /metrics:\n{text}"
    return float(match.group(1))


async def test_429s_rows_and_requests_reach_metrics(tmp_path: Path) -> None:
    # another user of the key, unseen, spends 5 of the gateway's 6 requests a minute: the
    # sync meets real 429s (the headers said a request was left), and each must show
    clock = ScaledClock(600.0)
    async with Simulator(clock=clock, events=3_000, contacts=40, minute_limit=6,
                         rate_limit_mode="fixed", scroll_ttl=1e9) as sim:  # fmt: skip
        sim.faults = Faults(hidden_competitor=5.0)
        async with Client(sim.client_key, sim.client_secret, base_url=sim.base_url,
                          organization=sim.organization, allow_http=True, clock=clock,
                          scroll_window=1e9) as api:  # fmt: skip
            store = open_destination(f"sqlite:///{tmp_path / 'm.db'}")
            options = SyncOptions(
                since=datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC),
                until=datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC),
                page_size=500,
            )
            syncer = Syncer(api, store, options=options)
            metrics = SyncMetrics(api, syncer)
            port = await metrics.start(0)
            try:
                await syncer.run_once()
                async with (
                    aiohttp.ClientSession() as http,
                    http.get(f"http://127.0.0.1:{port}/metrics") as resp,
                ):
                    assert resp.status == 200
                    text = await resp.text()
                stored = await store.count("events")
            finally:
                await metrics.stop()
                await store.close()
            # every 429 the sync met is on /metrics (the competitor makes them likely)
            assert (
                _sample(text, "asyncwifi_sync_rate_limited_responses_total")
                == (sim.counters.responses_by_status[429])
            )
            events = _sample(text, "asyncwifi_sync_rows_total", '{table="events"}')
            assert events == 3_000 == stored
            sent = sum(_sample(text, "asyncwifi_sync_requests", f'{{resource="{r}"}}')
                       for r in syncer.stats.requests)  # fmt: skip
            assert sent == sum(syncer.stats.requests.values()) > 0
            # now the competitor takes each minute whole: a 429 for sure, counted while the
            # metrics run, not counted once they stopped (the hook is removed)
            sim.faults = Faults(hidden_competitor=600.0)
            await metrics.start(0)
            await _until_a_new_429(sim, api)
            assert metrics.throttled._value.get() == sim.counters.responses_by_status[429] >= 1
            await metrics.stop()
            before = metrics.throttled._value.get()
            await _until_a_new_429(sim, api)
            assert metrics.throttled._value.get() == before


async def _until_a_new_429(sim: Simulator, api: Client) -> None:
    """Call the API until the gateway answers one more 429 (then stop calling)."""
    seen = sim.counters.responses_by_status[429]

    async def calls() -> None:
        while True:
            await api.hotspots.page()

    task = asyncio.ensure_future(calls())
    try:
        for _ in range(1_000):
            if sim.counters.responses_by_status[429] > seen:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("no 429 in 10 s")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_add_hook_adds_and_removes_and_refuses_a_bad_kind() -> None:
    sim = Simulator(clock=ScaledClock(100.0), events=10, contacts=5, rate_limit_mode="off")
    async with sim, sim.client() as api:
        seen: list[int] = []
        remove = api.add_hook("response", lambda info: seen.append(info.status))
        await api.hotspots.page()
        assert seen
        assert set(seen) == {200}
        count = len(seen)
        remove()
        remove()  # twice is harmless
        await api.hotspots.page()
        assert len(seen) == count
        with pytest.raises(ConfigurationError, match="hook kind"):
            api.add_hook("responses", print)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="callable"):
            api.add_hook("retry", 42)  # type: ignore[arg-type]


async def test_objects_allowance_and_projection_reach_metrics(tmp_path: Path) -> None:
    clock = ScaledClock(600.0)
    async with Simulator(clock=clock, events=1_200, contacts=40, rate_limit_mode="off") as sim:
        async with sim.client(month="3 access points") as api:  # 6,000 objects a month
            store = open_destination(f"sqlite:///{tmp_path / 'o.db'}")
            options = SyncOptions(
                since=datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC),
                until=datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC),
                page_size=500,
            )
            syncer = Syncer(api, store, options=options)
            metrics = SyncMetrics(api, syncer)
            port = await metrics.start(0)
            try:
                await syncer.run_once()
                text = await _scrape(port)
                month = await api.scheduler.objects()
                today = await api.scheduler.objects(period="day")
                projection = syncer.stats.projection  # what the sync's object plan projects
            finally:
                await metrics.stop()
                await store.close()
        assert month["events"] >= 1_200  # every event read at least once
        for kind in ("events", "contacts", "hotspots", "segments", "webhooks"):
            for period, counts in (("month", month), ("day", today)):
                labels = f'{{kind="{kind}",period="{period}"}}'
                assert _sample(text, "asyncwifi_sync_objects", labels) == counts.get(kind, 0)
        assert _sample(text, "asyncwifi_sync_objects_allowance", '{kind="all"}') == 6_000
        assert projection is not None
        assert _sample(text, "asyncwifi_sync_objects_projection") == projection


async def test_without_an_allowance_it_shows_as_unknown() -> None:
    async with (
        Simulator(clock=ScaledClock(100.0), events=10, contacts=5) as sim,
        sim.client() as api,
    ):
        assert api.scheduler.limits.allowance == {}
        metrics = SyncMetrics(api, Syncer(api, open_destination("sqlite:///:memory:")))
        port = await metrics.start(0)
        try:
            text = await _scrape(port)
        finally:
            await metrics.stop()
        assert _sample(text, "asyncwifi_sync_objects_allowance", '{kind="all"}') == -1
        assert _sample(text, "asyncwifi_sync_objects", '{kind="events",period="month"}') == 0


async def _scrape(port: int) -> str:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics") as resp,
    ):
        assert resp.status == 200
        return await resp.text()
