"""One pass of the sync against the simulator, on SQLite and PostgreSQL: the database ends
equal to the simulator's data; a second pass writes nothing; upstream creates, changes and
deletes of contacts and hotspots show after the next pass; a bad record is set aside."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from asyncwifi.engine import open_destination
from asyncwifi.engine._schema import STEPS
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._api_contacts import add_contact, modify_contact
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START, served
from tests.sync.conftest import sim_client

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)


async def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows of a query on the destination, read with the database's own driver."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            return [tuple(r) for r in conn.execute(sql)]
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def raw_of(url: str, table: str, ident: str) -> Any:
    found = await rows(url, f"SELECT raw FROM {table} WHERE id = '{ident}'")
    return json.loads(found[0][0])


async def test_one_pass_equals_the_source_and_a_second_writes_nothing(db_url: str) -> None:
    async with sim_client(events=3_000, contacts=150) as (sim, api):
        store = open_destination(db_url)
        syncer = Syncer(api, store, options=SyncOptions(since=SINCE, until=UNTIL, page_size=1_000))
        try:
            first = await syncer.run_once()
            assert await store.ids("events") == set(sim.data.event_ids())
            assert await store.count("events") == len(sim.data.event_ids()) == 3_000
            assert await store.ids("contacts") == {c["cid"] for c in sim.data.contacts}
            live = {h["id"] for h in sim.data.hotspots.values() if not h["deleted"]}
            assert await store.ids("hotspots") == live
            assert await store.ids("segments") == {s["id"] for s in sim.data.segments}
            contact = sim.data.contacts[7]
            # the contact as the API serves it (no null where spec §2.1 types a string)
            assert await raw_of(db_url, "contacts", contact["cid"]) == served(contact)
            assert first == 3_000 + 150 + len(live) + len(sim.data.segments)
            stamps = await rows(db_url, "SELECT id, synced_at FROM contacts ORDER BY id")
            second = await syncer.run_once()
            assert second == 0
            assert await rows(db_url, "SELECT id, synced_at FROM contacts ORDER BY id") == stamps
            assert await store.schema_version() == len(STEPS)
        finally:
            await store.close()


async def test_upstream_changes_show_after_the_next_pass(db_url: str) -> None:
    async with sim_client(events=500, contacts=60) as (sim, api):
        store = open_destination(db_url)
        options = SyncOptions(since=SINCE, until=UNTIL, reconcile_every=0)
        syncer = Syncer(api, store, options=options)
        try:
            await syncer.run_once()
            data = sim.data
            now = sim.clock.now()
            created = add_contact(data, now, firstName="Newcomer")
            changed = data.contacts[3]["cid"]
            modify_contact(data, changed, now, lastName="Renamed")
            gone = data.contacts[5]["cid"]
            assert data.delete_contact(gone)
            hotspots = list(data.hotspots.values())
            hotspots[0]["name"] = "Renamed AP"
            hotspots[1]["deleted"] = True
            new_hotspot = dict(hotspots[2], id="h-new", hotspotIdentifier="ap-new")
            data.hotspots["h-new"] = new_hotspot
            await syncer.run_once()
            assert await store.ids("contacts") == {c["cid"] for c in data.contacts}
            assert (await raw_of(db_url, "contacts", changed))["lastName"] == "Renamed"
            assert (await raw_of(db_url, "contacts", created))["firstName"] == "Newcomer"
            assert await store.ids("contacts", deleted=True) == {gone}
            live = {h["id"] for h in data.hotspots.values() if not h["deleted"]}
            assert await store.ids("hotspots") == live
            assert await store.ids("hotspots", deleted=True) == {hotspots[1]["id"]}
            assert (await raw_of(db_url, "hotspots", hotspots[0]["id"]))["name"] == "Renamed AP"
            # and back: a contact deleted then seen again is live again
            assert await syncer.run_once() == 0
        finally:
            await store.close()


async def test_a_bad_record_goes_to_the_dead_letters_and_the_sync_goes_on(db_url: str) -> None:
    async with sim_client(events=200, contacts=40) as (sim, api):
        data = sim.data
        hotspots = list(data.hotspots.values())
        bad = hotspots[2]["id"]
        hotspots[2]["latitude"] = "north"  # not a number: the Hotspot model refuses it
        bad_contact = data.contacts[4]["cid"]
        modify_contact(data, bad_contact, sim.clock.now(), logins="many")
        store = open_destination(db_url)
        options = SyncOptions(since=SINCE, until=UNTIL, reconcile_every=0)
        syncer = Syncer(api, store, options=options)
        try:
            await syncer.run_once()
            live = {h["id"] for h in hotspots if not h["deleted"]}
            assert await store.ids("hotspots") == live - {bad}
            good = {c["cid"] for c in data.contacts} - {bad_contact}
            assert await store.ids("contacts") == good
            letters = await rows(
                db_url, "SELECT resource, record_id, raw FROM sync_dead_letters ORDER BY resource"
            )
            assert [(r[0], r[1]) for r in letters] == [
                ("contacts", bad_contact),
                ("hotspots", bad),
            ]
            assert json.loads(bytes(letters[1][2])) == hotspots[2]
            assert json.loads(bytes(letters[0][2]))["logins"] == "many"
            # seen again on the next pass: kept once, and never taken for a delete
            await syncer.run_once()
            assert len(await rows(db_url, "SELECT id FROM sync_dead_letters")) == 2
            assert await store.ids("hotspots", deleted=True) == set()
            assert await store.ids("contacts", deleted=True) == set()
        finally:
            await store.close()
