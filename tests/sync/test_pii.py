"""The PII policy (issue 41), on SQLite and PostgreSQL: a sync with
``email=hash,phone=hash,name=drop`` leaves no seeded email, phone or name anywhere in the
database (typed columns, ``raw``, events, dead letters: the SQLite file's bytes after a
checkpoint and VACUUM, every PostgreSQL row as text), and the same email has the same hash
in two organizations; a bad policy is refused before any request."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest

from asyncwifi.engine import PiiPolicy, open_destination
from asyncwifi.errors import ValidationError
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._api_contacts import modify_contact
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import sim_client
from tests.sync.test_sync_pass import rows

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)
KEY = "a-test-key-of-the-operator"
POLICY = "email=hash,phone=hash,name=drop"


async def everything(url: str) -> bytes:
    """Every byte the database keeps: the SQLite file (after a checkpoint and VACUUM, as a
    user's file would be), or every PostgreSQL row of every table as text."""
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn = sqlite3.connect(path)
        conn.execute("VACUUM")
        conn.close()
        with open(path, "rb") as fh:
            return fh.read()
    tables = [r[0] for r in await rows(url, "SELECT tablename FROM pg_tables "
                                            "WHERE schemaname = 'public'")]  # fmt: skip
    text = [str(r[0]) for t in tables for r in await rows(url, f"SELECT t::text FROM {t} t")]
    return "\n".join(text).encode()


def seeded(contacts: list[dict[str, Any]]) -> set[str]:
    """The seeded emails, phones and names (names of 5 letters or more: shorter ones are
    found inside other words)."""
    found: set[str] = set()
    for c in contacts:
        found.update(v for v in (c["email"], c["phone"], c["phoneNumber"]) if v)
        found.update(n for n in (c["firstName"], c["lastName"]) if n and len(n) >= 5)
    return found


async def test_no_seeded_pii_anywhere_and_one_hash_per_email(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: typed email/phone/name columns and the whole record in raw, events'
    email.email and sms.phone, dead letters' bytes."""
    monkeypatch.setenv("ASYNCWIFI_PII_KEY", KEY)
    policy = PiiPolicy.parse(POLICY)
    hashes: list[dict[str, str]] = []
    for org in ("org-one", "org-two"):
        async with sim_client(events=1_500, contacts=60, organization=org) as (sim, api):
            contacts = sim.data.contacts
            modify_contact(sim.data, contacts[4]["cid"], sim.clock.now(), logins="many")
            store = open_destination(db_url, organization=api.organization)
            options = SyncOptions(since=SINCE, until=UNTIL, reconcile_every=0, pii=policy)
            try:
                await Syncer(api, store, options=options).run_once()
            finally:
                await store.close()
            letters = await rows(db_url, "SELECT raw FROM sync_dead_letters")
            assert letters  # the bad contact is there, scrubbed
            emails = await rows(
                db_url, f"SELECT id, email FROM contacts WHERE organization_id = '{org}'"
            )
            hashes.append({str(i): str(e) for i, e in emails if e is not None})
            stored = await everything(db_url)
            leaked = sorted(v for v in seeded(contacts) if v.encode() in stored)
            assert leaked == []
            raw = json.loads((await rows(db_url, "SELECT raw FROM contacts LIMIT 1"))[0][0])
            assert raw["firstName"] is None
            assert raw["lastName"] is None
            with_email = next(c for c in contacts if c["email"])
            want = hmac.new(KEY.encode(), with_email["email"].encode(), hashlib.sha256)
            assert hashes[-1][with_email["cid"]] == want.hexdigest()
    # the same seed: the same contacts and emails in both organizations, the same hashes
    shared = hashes[0].keys() & hashes[1].keys()
    assert shared
    assert all(hashes[0][k] == hashes[1][k] for k in shared)


def test_a_bad_policy_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASYNCWIFI_PII_KEY", raising=False)
    with pytest.raises(ValidationError, match="unknown field 'mail'"):
        PiiPolicy.parse("mail=hash")
    with pytest.raises(ValidationError, match="hash needs a key"):
        PiiPolicy.parse("email=hash")
    with pytest.raises(ValidationError, match="keep, drop or hash"):
        PiiPolicy.parse("email=blur")
    assert "KEYVALUE" not in repr(
        PiiPolicy.parse("email=hash", environ={"ASYNCWIFI_PII_KEY": "KEYVALUE"})
    )
