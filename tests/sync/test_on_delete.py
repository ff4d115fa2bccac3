"""``on_delete="purge"`` (issue 41), on SQLite and PostgreSQL: a contact or hotspot deleted
upstream is removed, not marked; in SQLite its bytes are gone from the file too (checked
without a VACUUM; the purge turns ``secure_delete`` on, which some SQLite builds, this
machine's among them, have on by default); ``soft`` stays the default."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.errors import ValidationError
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import sim_client

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)


async def test_purge_removes_what_was_deleted_upstream(db_url: str) -> None:
    """Before: every delete was soft: the row and its raw stayed for ever."""
    async with sim_client(events=100, contacts=40, hotspots=20) as (sim, api):
        store = open_destination(db_url)
        options = SyncOptions(
            since=SINCE, until=UNTIL, reconcile_every=0, on_delete="purge",
            resources="contacts,hotspots",
        )  # fmt: skip
        syncer = Syncer(api, store, options=options)
        try:
            await syncer.run_once()
            data = sim.data
            gone = next(c for c in data.contacts if c["email"])
            assert data.delete_contact(gone["cid"])
            hotspot = sorted(h for h, v in data.hotspots.items() if not v["deleted"])[0]
            data.change_hotspot(hotspot, sim.clock.now(), deleted=True)
            await syncer.run_once()
            assert gone["cid"] not in await store.ids("contacts")
            assert await store.ids("contacts", deleted=True) == set()
            assert hotspot not in await store.ids("hotspots")
            assert await store.ids("hotspots", deleted=True) == set()
            assert await store.count("contacts") == len(data.contacts)
        finally:
            await store.close()
        if db_url.startswith("sqlite:///"):
            path = db_url[len("sqlite:///") :]
            with sqlite3.connect(path) as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            with open(path, "rb") as fh:
                assert gone["email"].encode() not in fh.read()


def test_on_delete_is_checked() -> None:
    with pytest.raises(ValidationError, match="soft or purge"):
        SyncOptions(on_delete="hard")
    assert SyncOptions().on_delete == "soft"
