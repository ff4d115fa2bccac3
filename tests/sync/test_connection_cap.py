"""A worker's PostgreSQL connections are bounded, all organizations together
(``max_connections``), and organizations syncing side by side under the bound still store
each record once (a batch waiting for the one before it never holds that one up)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.errors import ValidationError
from asyncwifi.sync import Syncer, SyncOptions
from tests.sync.conftest import Recording, sim_client
from tests.sync.test_organizations import SINCE, UNTIL


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_three_organizations_under_two_connections_store_each_record_once(
    db_url: str,
) -> None:
    import asyncpg

    orgs = ("org-a", "org-b", "org-c")
    async with contextlib.AsyncExitStack() as stack:
        pairs = [
            await stack.enter_async_context(sim_client(events=900, contacts=40, organization=o))
            for o in orgs
        ]
        worker = open_destination(db_url, max_connections=2)  # each sync would take 2 or 3
        await worker.open()
        stack.push_async_callback(worker.close)
        views = [Recording(worker.for_organization(o)) for o in orgs]
        options = SyncOptions(since=SINCE, until=UNTIL, page_size=100, reconcile_every=0)
        watcher = await asyncpg.connect(db_url)
        stack.push_async_callback(watcher.close)
        most = 0

        async def watch() -> None:
            nonlocal most
            sql = (
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            while True:
                most = max(most, await watcher.fetchval(sql))
                await asyncio.sleep(0.005)

        watching = asyncio.create_task(watch())
        try:
            await asyncio.gather(
                *(Syncer(api, view, options=options).run_once()
                  for (_, api), view in zip(pairs, views, strict=True))
            )  # fmt: skip
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        assert 1 <= most <= 2
        for (sim, _), view in zip(pairs, views, strict=True):
            events = sim.data.event_ids()
            assert Counter(view.events) == Counter(events)  # each delivered once
            assert await view.count("events") == len(events)
            assert await view.ids("contacts") == {c["cid"] for c in sim.data.contacts}


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_a_connection_bound_is_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValidationError, match="max_connections"):
        open_destination("postgresql://u@h/db", max_connections=bad)  # type: ignore[arg-type]
