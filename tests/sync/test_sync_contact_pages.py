"""A sync against a server that caps contact pages (the reference shows ``size=100``; the
vendor documents up to 10,000): the contact scans ask for the largest page the server
accepts (``contacts.list(size="max")``, the one rule of the contacts page size), so every
contact is stored exactly once, and the refused sizes are paid once per client, not once
per scan or per pass (the command: tests/cli/test_cli_sync_contact_pages.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi import ScaledClock
from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_START

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_START + 86_400, UTC)
CONTACTS = 1_500
#: the server's largest contact page, and the sizes it refuses first (10,000, then 1,000)
CAPS = [(1_000, 1), (100, 2)]


@pytest.mark.parametrize(("cap", "refused"), CAPS)
async def test_the_syncer_learns_the_contact_page_size_once(
    tmp_path: Path, cap: int, refused: int
) -> None:
    # a slow clock: a scan pages through a scroll, whose 60 s must outlast a loaded machine
    # (and the client paces 60 requests a minute: the passes send about 50)
    clock = ScaledClock(30)
    async with (
        Simulator(
            clock=clock, events=200, contacts=CONTACTS, contacts_max_size=cap,
            rate_limit_mode="off",
        ) as sim,
        sim.client() as api,
    ):  # fmt: skip
        store = open_destination(f"sqlite:///{tmp_path / 'sync.db'}")
        options = SyncOptions(since=SINCE, until=UNTIL, reconcile_every=0)
        syncer = Syncer(api, store, options=options)
        try:
            # a scan of every contact: ceil(1,500 / cap) pages (totalCount ends it)
            pages = math.ceil(CONTACTS / cap)
            spent: list[int] = []
            for _ in range(2):  # each pass: the changes, then a full scan (reconcile)
                await syncer.run_once()
                assert await store.ids("contacts") == {c["cid"] for c in sim.data.contacts}
                assert await store.count("contacts") == CONTACTS
                assert sim.counters.responses_by_status[409] == refused
                spent.append(syncer.stats.requests["contacts"] - sum(spent))
            assert api.contacts.largest_page_size == cap
            # the first pass: every contact changed, then the scan, and the refused sizes
            # once; the second: no change (one empty page), the scan, nothing refused
            assert spent == [2 * pages + refused, 1 + pages]
        finally:
            await store.close()
