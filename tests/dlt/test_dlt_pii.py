"""The dlt source under the sync's PII policy (issue 41): no seeded email, phone or name
reaches the warehouse; emails arrive as their HMAC-SHA256 under the operator's key."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime
from pathlib import Path

import pytest

dlt = pytest.importorskip("dlt", reason="the dlt extra is absent: pip install asyncwifi[dlt]")
pytest.importorskip("duckdb", reason="dlt[duckdb] is not installed")

from asyncwifi import ScaledClock  # noqa: E402
from asyncwifi.dlt import asyncwifi_source  # noqa: E402
from asyncwifi.testing import Simulator  # noqa: E402
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START  # noqa: E402
from tests.dlt.conftest import pipeline, rows, run  # noqa: E402

KEY = "a-test-key-of-the-operator"


async def test_the_source_loads_no_seeded_pii(
    dlt_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASYNCWIFI_PII_KEY", KEY)
    clock = ScaledClock(10.0, start=DEFAULT_EVENTS_END + 3600)
    async with Simulator(clock=clock, events=300, contacts=20, rate_limit_mode="off") as sim:
        source = asyncwifi_source(
            sim.client(), date_start=datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC),
            pii="email=hash,phone=hash,name=drop",
        )  # fmt: skip
        target = pipeline(dlt_home)
        await run(target, source)
        contacts = sim.data.contacts
    stored = rows(dlt_home, "select cid, email, phone, first_name from wifi.contacts")
    assert len(stored) == len(contacts)
    everything = repr(stored) + repr(rows(dlt_home, "select * from wifi.events"))
    for c in contacts:
        for value in (c["email"], c["phone"], c["phoneNumber"], c["lastName"]):
            assert not value or value not in everything
    by_cid = {r[0]: r for r in stored}
    one = next(c for c in contacts if c["email"])
    want = hmac.new(KEY.encode(), one["email"].encode(), hashlib.sha256).hexdigest()
    assert by_cid[one["cid"]][1] == want
    assert all(r[3] is None for r in stored)
