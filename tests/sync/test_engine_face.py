"""A job of one's own on the engine's public face (``asyncwifi.engine``): a feed, the copy
loop and a destination, exactly once across a crash, as the sync and the backfill use them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from asyncwifi.engine import Copier, CopyOptions, EventFeed, open_destination
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import Crash, Recording, sim_client

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)


async def test_a_copier_of_a_feed_resumes_after_a_crash_and_writes_each_event_once(
    db_url: str,
) -> None:
    async with sim_client(events=2_000) as (sim, api):
        store = Recording(open_destination(db_url, organization=api.organization))
        await store.open()
        try:
            store.crash_at(3)  # the process dies between two transactions
            first = Copier(api, store, options=CopyOptions(retry_initial=0.01))
            feed = EventFeed(api, since=SINCE, until=UNTIL, settle=None, page_size=250)
            with pytest.raises(Crash):
                await first.copy(feed.__aiter__(), "events")
            await first.drain()
            assert 0 < len(store.events) < 2_000
            # a new run: the feed goes on from the checkpoint saved with the last rows
            again = Copier(api, store)
            checkpoint = await again.checkpoint("events")
            assert checkpoint is not None
            feed = EventFeed(api, checkpoint=checkpoint, until=UNTIL, settle=None, page_size=250)
            written = await again.copy(feed.__aiter__(), "events")
            assert sorted(store.events) == sorted(sim.data.event_ids())  # none twice
            assert written == 2_000 - sum(first.stats.rows.values())
            assert again.stats.rows == {"events": written}
            assert again.stats.requests["events"] >= written // 250
        finally:
            await store.close()
