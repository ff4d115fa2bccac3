"""Hotspots deleted upstream reach a dlt merge destination (issue 41): the source loads the
server's tombstones (spec §4.3's ``deleted=true`` list) as rows whose ``deleted`` column dlt
acts on: ``deletes="hard"`` (dlt's ``hard_delete`` hint) drops the row, ``"soft"`` (the
default, the sync's ``--on-delete soft``) keeps it with ``deleted`` true."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

dlt = pytest.importorskip("dlt", reason="the dlt extra is absent: pip install asyncwifi[dlt]")
pytest.importorskip("duckdb", reason="dlt[duckdb] is not installed")

from asyncwifi import ScaledClock  # noqa: E402
from asyncwifi.dlt import asyncwifi_source  # noqa: E402
from asyncwifi.errors import ValidationError  # noqa: E402
from asyncwifi.testing import Simulator  # noqa: E402
from tests.dlt.conftest import pipeline, rows, run  # noqa: E402
from tests.sync.conftest import ignore_deleted_filter  # noqa: E402


async def _delete_one_between_two_runs(home: Path, **source: str) -> tuple[str, set[str]]:
    """Two runs of the hotspots resource, a hotspot deleted upstream between them: its id,
    and the ids of the hotspots still live upstream."""
    async with Simulator(clock=ScaledClock(100.0), contacts=3, hotspots=4) as sim:
        target = pipeline(home)
        await run(target, asyncwifi_source(sim.client(), **source).with_resources("hotspots"))
        assert len(rows(home, "select id from wifi.hotspots")) == 4
        gone = next(iter(sim.data.hotspots))
        async with sim.client() as api:
            await api.hotspots.delete(gone)
        await run(target, asyncwifi_source(sim.client(), **source).with_resources("hotspots"))
        live = {h["id"] for h in sim.data.hotspots.values() if not h["deleted"]}
    assert gone not in live
    assert len(live) == 3
    return gone, live


async def test_a_hotspot_deleted_upstream_is_gone_under_hard_deletes(dlt_home: Path) -> None:
    gone, live = await _delete_one_between_two_runs(dlt_home, deletes="hard")
    stored = {r[0] for r in rows(dlt_home, "select id from wifi.hotspots")}
    assert gone not in stored
    assert stored == live
    assert rows(dlt_home, "select count(*) from wifi.hotspots where deleted") == [(0,)]


async def test_a_hotspot_deleted_upstream_is_flagged_under_soft_deletes(dlt_home: Path) -> None:
    gone, live = await _delete_one_between_two_runs(dlt_home)  # soft: the default
    stored = dict(rows(dlt_home, "select id, deleted from wifi.hotspots"))
    assert stored == {**dict.fromkeys(live, False), gone: True}
    # the flagged row is the server's whole record, not an id with nulls
    (name,) = rows(dlt_home, f"select name from wifi.hotspots where id = '{gone}'")
    assert name[0]


async def test_a_server_that_ignores_the_filter_deletes_nothing(
    dlt_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ignore_deleted_filter(monkeypatch)
    async with Simulator(clock=ScaledClock(100.0), contacts=3, hotspots=4) as sim:
        target = pipeline(dlt_home)
        with caplog.at_level(logging.WARNING, logger="asyncwifi.dlt"):
            for _ in range(3):
                # a live hotspot changed today: the "tombstones" list shows it (a live one)
                one = next(iter(sim.data.hotspots))
                sim.data.change_hotspot(one, sim.clock.now(), name="Renamed AP")
                source = asyncwifi_source(sim.client(), deletes="hard")
                await run(target, source.with_resources("hotspots"))
        lists = sim.counters.by_endpoint.total() - 3  # a login each run
    assert rows(dlt_home, "select count(*) from wifi.hotspots where not deleted") == [(4,)]
    said = [r for r in caplog.records if "deleted=true" in r.getMessage()]
    assert len(said) == 1  # said once, and not asked again
    assert lists == 4  # three live lists, one tombstone list


def test_a_bad_deletes_fails_before_any_request() -> None:
    with pytest.raises(ValidationError, match="deletes must be 'soft' or 'hard'"):
        asyncwifi_source(client_key="k", client_secret="s", deletes="purge")  # type: ignore[arg-type]
