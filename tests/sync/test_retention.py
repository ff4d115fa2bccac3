"""Local retention (issue 41), on SQLite and PostgreSQL, on a scaled clock: ``retention``
purges the events older than it and the contacts inactive for longer (their last change),
with 0 requests and 0 objects; a full reconcile does not write the old contacts back; as
the clock goes on, more ages out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from asyncwifi.engine import apply_retention, open_destination
from asyncwifi.errors import ValidationError
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._api_contacts import modify_contact
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import SPEED, GearedClock, sim_client
from tests.sync.test_sync_pass import rows

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
#: what the retention keeps: the second half of the events' month, and then some
DAY = 86_400.0


def epoch(value: object) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


async def times(url: str) -> list[float]:
    return sorted(epoch(r[0]) for r in await rows(url, "SELECT time FROM events"))


async def test_retention_purges_what_is_older_with_no_request(db_url: str) -> None:
    """Before: no retention; the mirror kept every row for ever."""
    clock = GearedClock(SPEED, start=DEFAULT_EVENTS_END + 3600)
    async with sim_client(clock=clock, events=2_000, contacts=40) as (sim, api):
        store = open_destination(db_url, organization=api.organization)
        try:
            # a few contacts active now; the others last changed long before the events
            active = [c["cid"] for c in sim.data.contacts[:5]]
            for cid in active:
                modify_contact(sim.data, cid, clock.now(), title="Dr.")
            await Syncer(api, store, options=SyncOptions(since=SINCE, reconcile_every=0)).run_once()
            every = await times(db_url)
            assert len(every) == 2_000
            retention = clock.now() - (DEFAULT_EVENTS_START + 15 * DAY)
            options = SyncOptions(since=SINCE, reconcile_every=0, retention=retention)
            syncer = Syncer(api, store, options=options)

            spent, served = sim.counters.requests, sum(sim.counters.objects_served.values())
            before = clock.now()
            purged = await apply_retention(syncer)
            after = clock.now()
            assert (sim.counters.requests, sum(sim.counters.objects_served.values())) == (
                spent, served
            )  # fmt: skip
            assert purged["events"] > 0
            kept = await times(db_url)
            assert kept[0] >= before - retention
            assert [t for t in every if t >= after - retention] == kept
            assert purged["contacts"] == 40 - len(active)
            assert await store.ids("contacts") == set(active)

            # a full reconcile reads every contact again: the old ones stay out
            before = clock.now()
            await syncer.run_once()
            assert await store.ids("contacts") == set(active)
            assert (await times(db_url))[0] >= before - retention

            # the clock goes on (fast: nothing is read meanwhile): more ages out
            left = len(await times(db_url))
            clock.shift(20_000.0)
            await clock.sleep(4 * 3600)
            clock.shift(SPEED)
            moved = clock.now()
            await apply_retention(syncer)
            now_kept = await times(db_url)
            assert now_kept[0] >= moved - retention
            assert len(now_kept) < left
        finally:
            await store.close()


def test_retention_is_checked() -> None:
    with pytest.raises(ValidationError, match="retention"):
        SyncOptions(retention=0)
    with pytest.raises(ValidationError, match="activity or creation"):
        SyncOptions(retention=DAY, retention_by="visit")
    assert SyncOptions().retention is None
