"""Many organizations in one database (SQLite and PostgreSQL): two syncs side by side
through ``for_organization`` views of one opened database, each organization's records
exactly once under its own ``organization_id``, even where both hold the same ids; one
organization's complete snapshot deletes nothing of the other's; a view closed leaves the
shared connections open."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.errors import ConfigurationError, ValidationError
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._api_contacts import modify_contact
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import Recording, sim_client
from tests.sync.test_sync_pass import rows

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)
NORTH, SOUTH = "org-north", "org-south"
TABLES = ("events", "contacts", "hotspots", "segments")


async def test_two_organizations_sync_side_by_side_into_one_database(db_url: str) -> None:
    # one seed: both organizations hold the same ids (their records differ): only a key
    # that includes the organization keeps both
    async with (
        sim_client(events=1_200, contacts=70, organization=NORTH) as (north, api_n),
        sim_client(events=900, contacts=70, organization=SOUTH) as (south, api_s),
    ):
        shared = {c["cid"] for c in north.data.contacts} & {c["cid"] for c in south.data.contacts}
        assert shared, "the test needs ids both organizations hold"
        cid = south.data.contacts[0]["cid"]
        modify_contact(south.data, cid, south.clock.now(), lastName="Southern")
        worker = open_destination(db_url)  # opened once, serving both through views
        await worker.open()
        a = Recording(worker.for_organization(NORTH))
        b = Recording(worker.for_organization(SOUTH))
        options = SyncOptions(since=SINCE, until=UNTIL, page_size=200, reconcile_every=0)
        sync_a, sync_b = Syncer(api_n, a, options=options), Syncer(api_s, b, options=options)
        try:
            await asyncio.gather(sync_a.run_once(), sync_b.run_once())
            for sim, view in ((north, a), (south, b)):
                events = sim.data.event_ids()
                assert Counter(view.events) == Counter(events)  # each delivered once
                assert await view.ids("events") == set(events)
                assert await view.count("events") == len(events)
                assert await view.ids("contacts") == {c["cid"] for c in sim.data.contacts}
                live = {h["id"] for h in sim.data.hotspots.values() if not h["deleted"]}
                assert await view.ids("hotspots") == live
                assert await view.ids("segments") == {s["id"] for s in sim.data.segments}
            # every row under its own organization, in the database itself
            for table in TABLES:
                counts = dict(
                    await rows(db_url, f"SELECT organization_id, count(*) FROM {table} GROUP BY 1")
                )
                assert counts == {NORTH: await a.count(table), SOUTH: await b.count(table)}
            names = await rows(
                db_url,
                f"SELECT organization_id, raw FROM contacts WHERE id = '{cid}' ORDER BY 1",
            )
            assert [(o, json.loads(r)["lastName"] == "Southern") for o, r in names] == [
                (NORTH, False),
                (SOUTH, True),
            ]

            # south deletes a hotspot and a contact both organizations hold: north keeps its
            gone_hotspot = next(iter(south.data.hotspots))
            south.data.hotspots[gone_hotspot]["deleted"] = True
            assert south.data.delete_contact(cid)
            await sync_b.run_once()
            assert await b.ids("hotspots", deleted=True) == {gone_hotspot}
            assert await b.ids("contacts", deleted=True) == {cid}
            assert await a.ids("hotspots", deleted=True) == set()
            assert await a.ids("contacts", deleted=True) == set()
            assert gone_hotspot in await a.ids("hotspots")
            assert await sync_a.run_once() == 0  # and north's next pass changes nothing

            # a view closed leaves the worker's connections open; the worker's close ends them
            await a.close()
            assert await b.count("events") == len(south.data.event_ids())
        finally:
            await worker.close()


async def test_a_checkpoint_is_the_organizations_own(db_url: str) -> None:
    from asyncwifi.engine import Write

    store = open_destination(db_url, organization=NORTH)
    await store.open()
    other = store.for_organization(SOUTH)
    try:
        assert (store.organization, other.organization) == (NORTH, SOUTH)
        await store.write(Write("events", checkpoints={"events": "north-cursor"}))
        assert await store.checkpoint("events") == "north-cursor"
        assert await other.checkpoint("events") is None
        await other.write(Write("events", checkpoints={"events": "south-cursor"}))
        assert await store.checkpoint("events") == "north-cursor"
        assert await other.checkpoint("events") == "south-cursor"
    finally:
        await other.close()
        await store.close()


async def test_a_syncer_writes_its_clients_organization(tmp_path: Path) -> None:
    async with sim_client(events=100, contacts=5, organization=NORTH) as (_sim, api):
        unnamed = open_destination(f"sqlite:///{tmp_path}/a.db")
        assert Syncer(api, unnamed).destination.organization == NORTH  # adopted
        named = open_destination(f"sqlite:///{tmp_path}/b.db", organization=SOUTH)
        with pytest.raises(ConfigurationError, match=r"org-south.*org-north"):
            Syncer(api, named)  # another organization's destination: refused


@pytest.mark.parametrize("bad", ["", " ", "a\x00b", 7])
def test_an_organization_is_checked_before_anything_opens(bad: object) -> None:
    with pytest.raises(ValidationError, match="organization"):
        open_destination("sqlite:///x.db", organization=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="organization"):
        open_destination("sqlite:///x.db").for_organization(bad)  # type: ignore[arg-type]
