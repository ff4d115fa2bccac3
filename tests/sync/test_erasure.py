"""Erasure (issue 41), on SQLite and PostgreSQL: an erased contact is gone upstream (the
simulator no longer lists it) and appears nowhere in the mirror (its email, phone, names
and id: the SQLite file's bytes as they are, free pages and WAL included, no VACUUM; every
PostgreSQL row as text) after the erasure, after the next pass (a full reconcile) and after
a lookback re-read of its late events; its suppression is keyed (HMAC with the PII key) and
a writer without that key is refused rather than write it back."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi import Client
from asyncwifi.engine import Suppression, SuppressionKeyError, open_destination
from asyncwifi.errors import ValidationError
from asyncwifi.sync import Syncer, SyncOptions, erase_contacts
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import SPEED, GearedClock, sim_client
from tests.sync.test_pii import everything
from tests.sync.test_sync_pass import rows

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
KEY = b"the-operator-s-erasure-key"
LOOKBACK = 120.0
#: the clock's speed through the first pass: 12 real seconds to a lookback
SLOW = 10.0


async def stored_bytes(url: str) -> bytes:
    """What the database keeps: the SQLite file and its WAL as they are (free pages
    included: no VACUUM), or every PostgreSQL row as text."""
    if not url.startswith("sqlite:///"):
        return await everything(url)
    path = Path(url[len("sqlite:///") :])
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def traces(contact: dict[str, object], others: list[dict[str, object]]) -> list[bytes]:
    """What of a contact may not remain: its id, email, phones, and its names that no
    other contact has."""
    keys = ("cid", "email", "phone", "phoneNumber", "firstName", "lastName")
    theirs = {o.get(k) for o in others if o["cid"] != contact["cid"] for k in keys}
    found = [contact[k] for k in keys if isinstance(contact.get(k), str)]
    return [str(v).encode() for v in found if v not in theirs and len(str(v)) >= 5]


async def test_an_erased_contact_is_gone_everywhere_for_good(db_url: str) -> None:
    """Before: no erasure; a contact deleted upstream stayed whole in ``raw`` (soft
    delete), and the lookback wrote its late events again."""
    # slow through the first pass (a loaded machine must not let it last a lookback: its
    # feed would re-read the recent past before the late events exist), fast after
    clock = GearedClock(SLOW, start=DEFAULT_EVENTS_END + 3600)
    async with sim_client(clock=clock, events=3_000, contacts=30) as (sim, api):
        store = open_destination(db_url, organization=api.organization)
        store.suppression = Suppression(KEY)
        options = SyncOptions(since=SINCE, reconcile_every=0, lookback=LOOKBACK, settle=1.0)
        syncer = Syncer(api, store, options=options)
        try:
            start = clock.now()
            await syncer.run_once()  # read up to ``start`` at least
            # late events before what the pass read, among them the chosen contact's
            late = sim.data.events.append(400, start=start - 40, end=start - 20)
            owners = Counter(sim.data.events.record(i)["customerId"] for i in late)
            live = {c["cid"]: c for c in sim.data.contacts}
            cid = next(c for c, _ in owners.most_common() if live.get(c, {}).get("email"))
            contact, everyone = live[cid], list(live.values())
            assert cid in await store.ids("contacts")
            before = await stored_bytes(db_url)
            assert all(t in before for t in traces(contact, everyone))

            done = await erase_contacts(api, [cid], [store])
            assert done.upstream == {cid: "deleted"}
            assert not done.failed
            (_, erased), = done.destinations  # fmt: skip
            assert erased.contacts == 1
            assert erased.events > 0
            assert erased.suppressions >= 2  # the id, the email (and the phone)
            # gone upstream: the simulator no longer lists it
            assert sim.data.contact(cid) is None
            assert cid not in [c.cid async for c in api.contacts.list()]
            # one request through the limiter, counted by the server
            assert sim.counters.by_endpoint["DELETE /v1/customers/{cid}"] == 1

            left = await stored_bytes(db_url)
            assert [t for t in traces(contact, everyone) if t in left] == []

            # the next pass: a full reconcile, and the lookback re-reading the late events
            clock.shift(SPEED)
            await clock.sleep(LOOKBACK + 30)
            await syncer.run_once()
            assert syncer.stats.late_events["lookback"] > 0  # the others' late events
            assert cid not in await store.ids("contacts")
            assert cid not in await store.ids("contacts", deleted=True)
            customers = await rows(db_url, "SELECT DISTINCT customer_id FROM events")
            assert cid not in {r[0] for r in customers}
            late_ids = {sim.data.events.event_id(i) for i in late}
            assert len(await store.existing("events", sorted(late_ids))) == len(late) - owners[cid]
        finally:
            await store.close()
        left = await stored_bytes(db_url)
        assert [t for t in traces(contact, everyone) if t in left] == []
        # a writer without the key cannot tell the erased contact apart: refused
        other = open_destination(db_url, organization=api.organization)
        other.suppression = Suppression(b"another-key")
        try:
            with pytest.raises(SuppressionKeyError, match="same key"):
                await Syncer(api, other, options=options).run_once()
        finally:
            await other.close()


async def test_the_suppression_is_a_keyed_hash(tmp_path: Path) -> None:
    """The table holds no id in clear: HMAC-SHA256 under the key, else SHA-256 (said)."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    async with Simulator(contacts=5, events=10, rate_limit_mode="off") as sim, Client(
        sim.client_key, sim.client_secret, base_url=sim.base_url,
        organization=sim.organization, allow_http=True,
    ) as api:  # fmt: skip
        cid, other = sim.data.contacts[0]["cid"], sim.data.contacts[1]["cid"]
        store = open_destination(url)
        try:
            await erase_contacts(api, [cid], [store], suppression=Suppression(KEY))
            # another key: refused before the upstream delete
            with pytest.raises(SuppressionKeyError):
                await erase_contacts(api, [other], [store], suppression=Suppression(b"k2"))
            assert sim.data.contact(other) is not None
            assert sim.counters.by_endpoint["DELETE /v1/customers/{cid}"] == 1
            # another mirror, another run: gone upstream (404), erased there all the same
            second = open_destination(f"sqlite:///{tmp_path / 'second.db'}")
            try:
                again = await erase_contacts(api, [cid], [second], suppression=Suppression(KEY))
            finally:
                await second.close()
            assert again.upstream == {cid: "gone"}
            assert again.destinations[0][1].suppressions >= 1
        finally:
            await store.close()
    (method, kind, digest), *_ = await rows(
        url, "SELECT method, kind, hash FROM sync_suppressions ORDER BY kind"
    )
    assert (method, kind) == ("hmac-sha256", "cid")
    assert digest == Suppression(KEY).of(cid)
    assert digest != hashlib.sha256(cid.encode()).hexdigest()
    assert (
        cid.encode()
        not in sqlite3.connect(tmp_path / "m.db")
        .execute("SELECT group_concat(hash) FROM sync_suppressions")
        .fetchone()[0]
        .encode()
    )
    assert Suppression(None).method == "sha256"
    assert "KEY" not in repr(Suppression(b"KEY"))


async def test_bad_ids_are_refused_before_any_request() -> None:
    async with Simulator(contacts=5, events=10, rate_limit_mode="off") as sim, Client(
        sim.client_key, sim.client_secret, base_url=sim.base_url,
        organization=sim.organization, allow_http=True,
    ) as api:  # fmt: skip
        for bad in ([], ["a b"], ["../x"], ["x" * 201], [""]):
            with pytest.raises(ValidationError):
                await erase_contacts(api, bad, [])
        assert api.logins == 0
