"""What the dlt source loads: all four resources keep the server's record whole (fields the
models do not know, records that do not decode)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("dlt", reason="the dlt extra is absent: pip install asyncwifi[dlt]")
pytest.importorskip("duckdb", reason="dlt[duckdb] is not installed")

from asyncwifi import ScaledClock
from asyncwifi.dlt import asyncwifi_source
from asyncwifi.sync import snapshot
from asyncwifi.testing import Simulator
from tests.dlt.conftest import pipeline, rows, run


async def test_hotspots_and_segments_keep_the_server_s_record_whole(dlt_home: Path) -> None:
    async with Simulator(clock=ScaledClock(100.0), contacts=5, hotspots=3, segments=2) as sim:
        first, second, third = sim.data.hotspots.values()
        first["vendorNote"] = "rooftop"  # a field the models do not know
        second["latitude"] = "north"  # does not decode
        del third["id"]  # no id
        sim.data.segments[0]["ruleCount"] = 4
        source = asyncwifi_source(sim.client()).with_resources("hotspots", "segments")
        await run(pipeline(dlt_home), source)
        async with sim.client() as api:
            synced = await snapshot(api, "hotspots")  # what the sync stores, or sets aside

        notes = "select id, vendor_note from wifi.hotspots where vendor_note is not null"
        assert rows(dlt_home, notes) == [(first["id"], "rooftop")]
        # every hotspot once, under the sync's id: its own, else sha256: of its bytes
        ids = [r[0] for r in rows(dlt_home, "select id from wifi.hotspots")]
        assert sorted(ids) == sorted([first["id"], *(bad.id for bad in synced.bad)])
        assert second["id"] in ids
        assert any(i.startswith("sha256:") for i in ids)
        segments = "select rule_count from wifi.segments where rule_count is not null"
        assert rows(dlt_home, segments) == [(4,)]
