"""``--since`` earlier than where a database's events start (issue 40): the gap is read with
the engine's event feed, each event once, and a gap cut short (a crash) resumes from its
own checkpoint; the database's start moves only once the whole gap is in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._earlier import START, read_earlier
from tests.sync.conftest import Crash, Recording, sim_client

JAN = [datetime(2026, 1, day, tzinfo=UTC) for day in (1, 2, 3)]
MS = timedelta(milliseconds=1)


async def test_a_gap_cut_short_resumes_and_every_event_is_written_once(tmp_path: Path) -> None:
    said: list[tuple[str, bool]] = []
    written: list[str] = []
    url = f"sqlite:///{tmp_path / 's.db'}"
    async with sim_client(events=900, contacts=5, events_start=JAN[0], events_end=JAN[2]) as (
        sim,
        api,
    ):

        async def run(since: datetime, crash_at: int = 0) -> Syncer:
            store = Recording(open_destination(url, organization=api.organization), written)
            store.crash_at(crash_at)
            await store.open()
            options = SyncOptions(since=since, until=JAN[2] - MS, page_size=50)
            syncer = Syncer(api, store, options=options)
            try:
                await read_earlier(
                    syncer, since, lambda line, warning: said.append((line, warning))
                )
                await syncer.run_once()
            finally:
                await syncer.drain()
                await store.close()
            return syncer

        await run(JAN[1])  # the first run: the second day
        assert sorted(written) == sorted(sim.data.event_ids(JAN[1], JAN[2] - MS))
        with pytest.raises(Crash):
            await run(JAN[0], crash_at=3)  # the gap dies at its third write
        db = open_destination(url, organization=api.organization)
        await db.open()
        assert await db.checkpoint(START) == "2026-01-02T00:00:00.000Z"  # not moved yet
        assert await db.checkpoint("events.earlier:2026-01-01T00:00:00.000Z") is not None
        await db.close()
        resumed = len(written)
        await run(JAN[0])
        assert len(written) > resumed
    assert sorted(written) == sorted(sim.data.event_ids(JAN[0], JAN[2] - MS))  # each once
    assert [w for _, w in said] == [False, False]  # "reading the events from ... first", twice
    assert said[0][0].startswith("reading the events from 2026-01-01T00:00:00.000Z to "
                                 "2026-01-02T00:00:00.000Z first")  # fmt: skip
