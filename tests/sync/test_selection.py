"""Selection (issue 41), on SQLite and PostgreSQL: ``resources`` and ``event_types`` keep
only what the operator asked for; what is not kept is never read (no request, no object),
the object plan budgets nothing for it and says so; a bad selection is refused before any
request (the command: one line, exit 78)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.errors import ValidationError
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import sim_client
from tests.sync.test_sync_pass import rows

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)
KEPT = ("visit", "login")


async def test_events_of_two_types_spend_no_other_object(db_url: str) -> None:
    """Before: every pass read contacts, hotspots and segments (their objects spent)."""
    async with sim_client(events=600, contacts=40) as (sim, api):
        store = open_destination(db_url)
        options = SyncOptions(
            since=SINCE, until=UNTIL, reconcile_every=0, refresh_every=1,
            resources="events", event_types="visit,login",
        )  # fmt: skip
        syncer = Syncer(api, store, options=options)
        try:
            for _ in range(3):
                await syncer.run_once()
            spent = sim.counters.objects_by_endpoint
            assert [e for e in spent if spent[e] and "/events" not in e] == []
            paths = [e for e in sim.counters.by_endpoint if "/events" not in e]
            assert all("login" in p or "token" in p or "oauth" in p for p in paths), paths
            types = {r[0] for r in await rows(db_url, "SELECT DISTINCT type FROM events")}
            assert types == set(KEPT)
            assert await store.ids("events") == set(sim.data.event_ids(types=KEPT))
            for table in ("contacts", "hotspots", "segments"):
                assert await store.count(table) == 0
            plan = syncer.plan
            assert plan is not None
            assert {k: plan.costs[k] for k in ("contacts", "hotspots", "segments")} == {
                "contacts": 0, "hotspots": 0, "segments": 0,
            }  # fmt: skip
            said = plan.describe()
            assert "  contacts: not kept (--resources): 0" in said
            assert "  segments: not kept (--resources): 0" in said
        finally:
            await store.close()


def test_a_bad_selection_is_refused() -> None:
    with pytest.raises(ValidationError, match="unknown resource 'guests'"):
        SyncOptions(resources="events,guests")
    with pytest.raises(ValidationError, match="at least one"):
        SyncOptions(event_types=",")
    assert SyncOptions(resources=["segments", "events"]).resources == {"segments", "events"}


def test_fleet_toml_selects_per_organization(tmp_path: Path) -> None:
    from asyncwifi.errors import ConfigurationError
    from asyncwifi.fleet import load_fleet_config

    head = '[fleet]\nbase_url = "https://x"\nresources = "events"\n'
    org = '[[organizations]]\norganization = "o1"\nclient_key = "k"\nclient_secret = "S"\n'
    path = tmp_path / "fleet.toml"
    path.write_text(head + org + 'event_types = ["visit", "login"]\n')
    o1 = load_fleet_config(path)["o1"]
    assert (o1.resources, o1.event_types) == (("events",), ("login", "visit"))
    path.write_text(head + org + 'resources = "events,guests"\n')
    with pytest.raises(ConfigurationError, match="'o1': resources: unknown resource 'guests'"):
        load_fleet_config(path)


def test_the_dlt_source_keeps_the_selected_resources() -> None:
    pytest.importorskip("dlt", reason="the dlt extra is absent")
    from asyncwifi import Client
    from asyncwifi.dlt import asyncwifi_source

    def source(**kw: object) -> list[str]:
        api = Client("k", "s", base_url="https://x.example", organization="o")
        return sorted(asyncwifi_source(api, date_start="2026-01-01T00:00:00Z", **kw).resources)

    assert source() == ["contacts", "events", "hotspots", "segments"]
    assert source(resources=["events", "segments"]) == ["events", "segments"]
    with pytest.raises(ValidationError, match="unknown resource"):
        source(resources=["guests"])


def test_fleet_toml_takes_a_pii_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from asyncwifi.errors import ConfigurationError
    from asyncwifi.fleet import load_fleet_config

    org = '[[organizations]]\norganization = "o1"\nclient_key = "k"\nclient_secret = "S"\n'
    path = tmp_path / "fleet.toml"
    path.write_text('[fleet]\nbase_url = "https://x"\npii = "email=hash"\n' + org)
    monkeypatch.delenv("ASYNCWIFI_PII_KEY", raising=False)
    with pytest.raises(ConfigurationError, match=r"\[fleet\]: pii: hash needs a key"):
        load_fleet_config(path)
    monkeypatch.setenv("ASYNCWIFI_PII_KEY", "k3y")
    assert load_fleet_config(path)["o1"].pii == "email=hash"
