"""One record, one id, whoever reads it (issue 23), over real HTTP against the simulator on
every record shape, with scroll ids that live as documented and ones that expire at once:
an event that does not decode, one that does not decode and has no id, and one that
decodes with no id get the same id from the backfill (the ids it commits), the sync (its
dead letters) and the stream (``stream.errors``), once each however often a resumed scroll
meets them: the rule of ``asyncwifi.models._identity``, the record's own id else
``sha256:`` of its bytes."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import StreamOptions
from asyncwifi.backfill import events_backfill
from asyncwifi.engine import open_destination
from asyncwifi.engine._jsonl import JsonlDestination
from asyncwifi.models._identity import content_id
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._api_events import patch_event
from tests.sync.conftest import sim_client

SINCE = datetime(2024, 1, 1, tzinfo=UTC)
UNTIL = SINCE + timedelta(days=1)


@pytest.mark.parametrize("ttl", [60.0, 0.001])
@pytest.mark.parametrize("shape", ["nested", "flat", "dated"])
async def test_the_backfill_the_sync_and_the_stream_name_an_odd_event_alike(
    tmp_path: Path, shape: str, ttl: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    options: dict[str, Any] = {"events_start": SINCE, "events_end": UNTIL, "event_shape": shape}
    # pages of 100: with ids that expire at once, every continuation lapses and resumes
    async with sim_client(events=300, scroll_ttl=ttl, **options) as (sim, api):
        events = sim.data.events
        no_id = {"event": {"type": "visit"}} if shape == "nested" else {"id": None}
        patch_event(events, 10, visit="broken")  # does not decode; its id is still there
        patch_event(events, 20, visit="broken", **no_id)  # does not decode, and has no id
        patch_event(events, 30, **no_id)  # decodes, with no id
        expected = {
            events.event_json(10): events.event_id(10),
            events.event_json(20): content_id(events.event_json(20)),
            events.event_json(30): content_id(events.event_json(30)),
        }

        # the backfill: the id it gives each line it writes (its destination's primary key)
        named: dict[bytes, str] = {}
        commit = JsonlDestination._commit

        def spy(self: JsonlDestination, conn: Any, writes: Any) -> list[int]:
            named.update((bytes(raw), ident) for w in writes for ident, raw in w.rows)
            return commit(self, conn, writes)

        monkeypatch.setattr(JsonlDestination, "_commit", spy)
        out = tmp_path / "events.jsonl"
        job = events_backfill(
            api,
            since=SINCE,
            until=UNTIL,
            out=out,
            state=tmp_path / "state",
            concurrency=1,
            page_size=100,
        )
        assert (await job.run()).status == "done"
        lines = out.read_bytes().splitlines()
        assert len(set(lines)) == len(lines) == 300  # every record once, the odd ones too
        written = {line: named[line] for line in lines}
        assert len(set(written.values())) == 300
        assert {raw: written[raw] for raw in expected} == expected

        # the sync: the three set aside, under the same ids
        url = f"sqlite:///{tmp_path / 'sync.db'}"
        store = open_destination(url)
        await store.open()
        try:
            options = SyncOptions(since=SINCE, until=UNTIL, page_size=100)
            await Syncer(api, store, options=options).sync_events()
        finally:
            await store.close()
        with sqlite3.connect(tmp_path / "sync.db") as conn:
            letters = dict(conn.execute("SELECT raw, record_id FROM sync_dead_letters"))
        assert {bytes(raw): ident for raw, ident in letters.items()} == expected

        # the stream: the two that do not decode, on stream.errors, under the same ids
        stream = api.events.list(
            date_start=SINCE, date_end=UNTIL, size=100, options=StreamOptions(keep_raw=True)
        )
        async with stream:
            assert len([r async for r in stream.records()]) == 298
        assert {e.raw: e.id for e in stream.errors} == {
            raw: ident for raw, ident in expected.items() if raw != events.event_json(30)
        }
