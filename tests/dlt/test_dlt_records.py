"""What the dlt source loads and how it is set up: all four resources keep the server's
record whole (fields the models do not know, records that do not decode), contact columns
are typed by the models, and plain http is allowed by the same switch as
``Client.from_env()`` (``ASYNCWIFI_ALLOW_HTTP``)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("dlt", reason="the dlt extra is absent: pip install asyncwifi[dlt]")
pytest.importorskip("duckdb", reason="dlt[duckdb] is not installed")

from asyncwifi import Client, ScaledClock
from asyncwifi.dlt import asyncwifi_source
from asyncwifi.engine._snapshots import snapshot
from asyncwifi.errors import ConfigurationError
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


async def test_contact_columns_are_typed_by_the_models(
    dlt_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with Simulator(clock=ScaledClock(100.0), contacts=20) as sim:
        with caplog.at_level(logging.WARNING, logger="dlt"):
            await run(pipeline(dlt_home), asyncwifi_source(sim.client()).with_resources("contacts"))
        assert not [r for r in caplog.records if "could not have their types" in r.getMessage()]
        columns = dict(
            rows(
                dlt_home,
                "select column_name, data_type from information_schema.columns "
                "where table_schema = 'wifi' and table_name = 'contacts'",
            )
        )
        # null in every record, typed all the same
        assert columns["external_identity_id"] == columns["personal_id"] == "VARCHAR"
        # the model's types, not what dlt would guess from the values (3 -> BIGINT)
        assert columns["metrics__avg_visit_length"] == "DOUBLE"
        assert columns["logins"] == "BIGINT"
        assert columns["email_verified"] == "BOOLEAN"
        assert columns["ext_id__prop1"] == "VARCHAR"


ENV_CASES = [None, "1", "true", "0", ""]


@pytest.mark.parametrize("flag", ENV_CASES)
def test_plain_http_is_allowed_as_client_from_env_allows_it(
    dlt_home: Path, monkeypatch: pytest.MonkeyPatch, flag: str | None
) -> None:
    # ``asyncwifi simulate`` exports these: the source follows Client.from_env()
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "key")
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", "secret")
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", "http://127.0.0.1:8080")
    if flag is not None:
        monkeypatch.setenv("ASYNCWIFI_ALLOW_HTTP", flag)
    refusal = None
    try:
        Client.from_env()
    except ConfigurationError as exc:
        refusal = str(exc)
    if refusal is None:
        asyncwifi_source()
    else:
        assert "ASYNCWIFI_ALLOW_HTTP=1" in refusal
        with pytest.raises(ConfigurationError) as refused:
            asyncwifi_source()
        assert str(refused.value) == refusal
    # a keyword wins over the environment, as with Client.from_env(allow_http=...)
    with pytest.raises(ConfigurationError, match="plain http"):
        asyncwifi_source(allow_http=False)
