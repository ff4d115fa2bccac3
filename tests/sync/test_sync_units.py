"""The pieces of a sync on their own: a replayed batch writes nothing (both stores), the
event row builder matches the table's columns, the budget's division, the time cursor; and
the checkpoint's pieces: an event's UTC time whatever its text (and the machine's zone), the
checkpoint text and its refusals, and the cursor's fields."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import msgspec
import pytest

from asyncwifi import Event, Limit, Limits
from asyncwifi._clock import ScaledClock
from asyncwifi._cursor import TimeCursor, parse_checkpoint
from asyncwifi._instant import floor_ms as ms_floor
from asyncwifi._instant import utc_time, utc_times
from asyncwifi._stream import Record
from asyncwifi.engine import Batch, Budget, Write, open_destination
from asyncwifi.engine._destination import rows_of
from asyncwifi.engine._schema import STEPS, TABLES
from asyncwifi.errors import ValidationError
from asyncwifi.models._identity import content_id
from asyncwifi.ratelimit import Scheduler
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import sim_client

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T_SIM_START = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
T_SIM_END = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)


def _events(n: int, *, nested: bool = True) -> Batch[Event]:
    records, times = [], []
    for i in range(n):
        when = T0 + timedelta(seconds=i // 2)
        body: dict[str, object] = (
            {
                "organizationId": "org",
                "customerId": f"c{i}",
                "event": {"type": "visit", "id": f"e{i:04d}"},
                "where": {"locationId": "L", "locationName": "x", "hotspotId": "H"},
                "when": {"createdAt": when.isoformat().replace("+00:00", "Z")},
            }
            if nested
            else {"type": "signup", "id": f"e{i:04d}", "signup": {"source": "api"}}
        )
        raw = msgspec.json.encode(body)
        event = msgspec.json.decode(raw, type=Event)
        records.append(Record(event, msgspec.Raw(raw)))
        times.append(event.time)
    return Batch(
        "events", [r.item for r in records], [r.raw for r in records], [], "cp", times=times
    )


@pytest.mark.parametrize("nested", [True, False])
def test_the_event_row_builder_matches_the_table(nested: bool) -> None:
    batch = _events(5, nested=nested)
    now = datetime.now(UTC)
    fast = rows_of(batch, now)
    table = TABLES["events"]
    slow = [
        table.values(r.item, r.item.id, bytes(r.raw or b"").decode(), now) for r in batch.records
    ]
    assert [list(row) for row in fast] == slow
    assert len(fast[0]) == len(table.names)


async def test_a_replayed_batch_writes_nothing(db_url: str) -> None:
    store = open_destination(db_url)
    await store.open()
    try:
        batch = _events(50)
        assert await store.write(Write("events", rows_of(batch), checkpoints={"e": "1"})) == 50
        # the same rows again (a replay), and half of them with new ones
        assert await store.write(Write("events", rows_of(batch), checkpoints={"e": "2"})) == 0
        more = _events(80)
        assert await store.write(Write("events", rows_of(more))) == 30
        assert await store.count("events") == 80
        assert await store.checkpoint("e") == "2"
        await store.open()  # migrations are applied once
        assert await store.schema_version() == len(STEPS)
    finally:
        await store.close()


async def test_event_writes_load_side_by_side_and_commit_in_order(db_url: str) -> None:
    # the second batch's rows load while the first is still open; its rows and checkpoint
    # become visible only once the first committed (a checkpoint never passes rows)
    store = open_destination(db_url, writers=2)
    await store.open()
    try:
        first_committed = asyncio.Event()
        batch = _events(60)
        second = Write("events", rows_of(batch)[30:], checkpoints={"events": "two"})
        writing = asyncio.ensure_future(store.write(second, after=first_committed.wait()))
        await asyncio.sleep(0.2)
        assert not writing.done()
        assert await store.checkpoint("events") is None
        assert await store.count("events") == 0
        first = Write("events", rows_of(batch)[:30], checkpoints={"events": "one"})
        assert await store.write(first) == 30
        assert await store.checkpoint("events") == "one"
        first_committed.set()
        assert await writing == 30
        assert await store.checkpoint("events") == "two"
        assert await store.count("events") == 60
    finally:
        await store.close()


def test_writers_must_be_a_positive_integer() -> None:
    with pytest.raises(ValidationError, match="writers"):
        open_destination("postgresql://u@h/db", writers=0)


async def test_budget_divides_the_share_and_events_take_what_is_left() -> None:
    # the limiter's counts per tag are the budget's: nothing is counted twice
    scheduler = Scheduler(Limits(minute=None, day=Limit(15_000, 86_400.0)),
                          clock=ScaledClock(1.0, start=T0.timestamp()))  # fmt: skip
    budget = Budget(scheduler, 0.5)
    assert budget.total == 7_500
    assert budget.allowance("contacts", {}) == 2_250
    assert budget.allowance("hotspots", {}) == 375
    assert budget.allowance("events", {}) == 7_500
    for _ in range(2_000):
        scheduler.release(await scheduler.acquire(tag="contacts"))
    assert await budget.remaining("contacts") == 250
    assert await budget.remaining("events") == 5_500  # never starved by the others' reserve
    with pytest.raises(ValidationError):
        Budget(scheduler, 0.0)
    with pytest.raises(ValidationError):
        Budget(scheduler, 0.5, shares={"events": 0.9})
    with pytest.raises(ValidationError, match="no day"):
        Budget(Scheduler(Limits(day=None)), 0.5)
    await scheduler.aclose()


def test_time_cursor_windows_untimed_records_exactly() -> None:
    cursor = TimeCursor.start("events", None, T0)
    end = T0 + timedelta(hours=1)
    assert cursor.begin_span(end) == end
    for ident in ("a", "b"):
        cursor.add(ident, None)  # no time: ``at`` cannot move
    assert cursor.at == T0
    assert cursor.skip == {"a", "b"}
    cursor.complete(end)
    assert cursor.at == end
    assert cursor.carry == {"a", "b"}
    assert not cursor.fresh
    restored = TimeCursor.start("events", cursor.encode(), T0)
    assert (restored.at, restored.carry) == (end, {"a", "b"})
    restored.begin_span(end + timedelta(hours=1))
    restored.add("c", end + timedelta(seconds=5))  # timed: moves, drops the carry
    assert restored.skip == {"c"}
    with pytest.raises(ValidationError):
        TimeCursor.start("contacts", cursor.encode(), T0)  # another feed's checkpoint


def test_a_cursor_restored_mid_window_finishes_that_window() -> None:
    # records with no time, saved part-way through a wide span: their ids may lie
    # anywhere up to its end. A restored cursor asked for a narrower span (a new feed
    # starts with a day) goes on to that end, and forgets no id before it is passed
    wide = T0 + timedelta(days=30)
    cursor = TimeCursor.start("events", None, T0)
    cursor.begin_span(wide)
    for ident in ("a", "b"):
        cursor.add(ident, None)
    saved = cursor.encode()
    restored = TimeCursor.start("events", saved, T0)
    assert restored.begin_span(T0 + timedelta(days=1), wide + timedelta(days=9)) == wide
    restored.complete(wide)
    assert (restored.at, restored.carry, restored.fresh) == (wide, {"a", "b"}, set())
    assert '"to"' not in restored.encode()  # complete: nothing pending any more
    # cut short by an earlier end (a run with an earlier until): every id is kept, and
    # the next run goes on with the same span
    early = T0 + timedelta(days=2)
    cut = TimeCursor.start("events", saved, T0)
    assert cut.begin_span(T0 + timedelta(days=1), early) == early
    cut.add("c", None)
    cut.complete(early)
    assert (cut.at, cut.skip) == (early, {"a", "b", "c"})
    again = TimeCursor.start("events", cut.encode(), T0)
    assert again.begin_span(early + timedelta(days=1), wide) == wide
    assert again.skip == {"a", "b", "c"}
    # records with a time: the ids at ``at`` are all there is to keep (no span end)
    timed = TimeCursor.start("events", None, T0)
    timed.begin_span(wide)
    timed.add("t", T0 + timedelta(hours=3))
    assert '"to"' not in timed.encode()
    back = TimeCursor.start("events", timed.encode(), T0)
    assert back.begin_span(T0 + timedelta(days=1)) == T0 + timedelta(days=1)


async def test_a_checkpoint_read_waits_out_an_outage(tmp_path: Path) -> None:
    # the database is unreachable when the feed reads where it stopped: the sync waits and
    # retries (the daemon does not end), then syncs every event once
    from asyncwifi.engine import DestinationUnavailableError
    from asyncwifi.engine._sqlite import SqliteDestination
    from asyncwifi.sync import Syncer, SyncOptions

    class Flaky(SqliteDestination):
        failures = 2

        async def checkpoint(self, name: str) -> str | None:
            if self.failures:
                self.failures -= 1
                raise DestinationUnavailableError("connection refused (test)")
            return await super().checkpoint(name)

    async with sim_client(events=500, contacts=5) as (sim, api):
        store = Flaky(str(tmp_path / "flaky.db"))
        await store.open()
        options = SyncOptions(since=T_SIM_START, until=T_SIM_END, retry_initial=0.01)
        syncer = Syncer(api, store, options=options)
        try:
            assert await syncer.sync_events() == 500
            assert syncer.stats.store_outages == 1
            assert syncer.stats.store_down_since is None
            assert await store.ids("events") == set(sim.data.event_ids())
        finally:
            await store.close()


def test_a_page_added_at_once_leaves_the_cursor_as_record_by_record() -> None:
    # pages in order, out of order, with equal milliseconds, sub-millisecond parts, records
    # with no time, before ``at``: add_page must end exactly where add() one by one ends
    import random

    rnd = random.Random(17)
    for case in range(600):
        base = T0 + timedelta(seconds=rnd.randrange(3))
        start = TimeCursor("events", base, {"c1"}, {"f1"}, timed=rnd.random() < 0.9)
        one, page = (TimeCursor(**{f: getattr(start, f) for f in ("kind", "at", "carry",
                     "fresh", "timed")}) for _ in range(2))  # fmt: skip
        one.carry, one.fresh = set(start.carry), set(start.fresh)
        page.carry, page.fresh = set(start.carry), set(start.fresh)
        offsets = sorted(rnd.randrange(-1500, 4000) for _ in range(rnd.randrange(1, 12)))
        if rnd.random() < 0.2:
            rnd.shuffle(offsets)
        whens: list[datetime | None] = [base + timedelta(microseconds=o * 700) for o in offsets]
        if rnd.random() < 0.1:
            whens[rnd.randrange(len(whens))] = None
        idents = [f"e{case}-{i}" for i in range(len(whens))]
        for ident, when in zip(idents, whens, strict=True):
            one.add(ident, when)
        page.add_page(idents, whens)
        assert (page.at, page.carry, page.fresh, page.timed) == (
            one.at,
            one.carry,
            one.fresh,
            one.timed,
        ), case


def test_a_page_with_replays_duplicates_or_no_id_is_filtered_record_by_record() -> None:
    from asyncwifi.engine._feeds import BadRecord, _clean, _fresh

    batch = _events(6)
    items, raws = batch.items, batch.raws
    cursor = TimeCursor.start("events", None, T0)
    assert _clean([e.id for e in items], cursor)
    # e0001 was delivered before (a replay after a resume), e0003 comes twice, one has no id
    cursor.fresh.add("e0001")
    nameless = msgspec.structs.replace(items[4], id=None, event=None)
    page = [*items[:4], items[3], nameless, items[5]]
    page_raws = [*raws[:4], raws[3], raws[4], raws[5]]
    ids = [e.id for e in page]
    assert not _clean(ids, cursor)
    bad: list[BadRecord] = []
    kept, kept_raws, idents = _fresh(page, page_raws, cursor, bad)  # type: ignore[arg-type]
    assert idents == ["e0000", "e0002", "e0003", "e0005"]
    assert [e.id for e in kept] == idents
    assert kept_raws == [raws[0], raws[2], raws[3], raws[5]]
    nameless_raw = bytes(raws[4] or b"")
    assert [(b.error, b.raw) for b in bad] == [("an event with no id", nameless_raw)]
    assert bad[0].id == content_id(nameless_raw)  # the one rule: named by its content


# -- the checkpoint's pieces: an event's UTC time, the checkpoint text, the cursor's fields -----


def event_time(event: Event) -> datetime | None:
    """An event's UTC time as the sync reads it (the owner: ``_instant``)."""
    return utc_time(event.time_text)


def event_times(events: list[Event]) -> list[datetime | None]:
    """A page's times at once, as the feed reads them."""
    return utc_times(e.time_text for e in events)


def _event(date: str | None) -> Event:
    return msgspec.json.decode(msgspec.json.encode({"id": "e1", "date": date}), type=Event)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01T00:00:00Z", T0),
        ("2024-01-01T00:00:00.250Z", T0 + timedelta(milliseconds=250)),
        ("2024-01-01T01:00:00+01:00", T0),
        ("2023-12-31T19:00:00-05:00", T0),
        ("2024-01-01T00:00:00", T0),  # no zone: UTC, whatever the machine's zone
        (" 2024-01-01T00:00:00Z", T0),  # odd texts take the general parser
        ("2024-01-01T00:00:00z", T0),
        ("not a time", None),
        (None, None),
    ],
)
def test_an_events_time_is_aware_utc_whatever_its_text(
    zone_new_york: None, text: str | None, expected: datetime | None
) -> None:
    got = event_time(_event(text))
    assert got == expected
    if got is not None:
        assert got.tzinfo is UTC
    assert event_times([_event(text)]) == [expected]


def test_a_pages_times_read_at_once_are_utc_in_any_local_zone(zone_new_york: None) -> None:
    texts = ["2024-01-01T00:00:00Z", "2024-01-01T01:00:00+01:00", "2024-01-01T00:00:01", None]
    times = event_times([_event(t) for t in texts])
    assert times == [T0, T0, T0 + timedelta(seconds=1), None]
    assert all(t.tzinfo is UTC for t in times if t is not None)


def test_a_checkpoint_that_is_not_one_is_refused_quoting_60_characters() -> None:
    long_text = "x" * 100
    with pytest.raises(
        ValidationError, match=f"^{re.escape(f'not a events checkpoint: {long_text[:60]!r}')}$"
    ):
        parse_checkpoint(long_text, "events")
    other = '{"v":1,"kind":"contacts","at":"2024-01-01T00:00:00.000Z","carry":[],"fresh":[]}'
    message = f"not a version 1 events checkpoint: {other[:60]!r}"
    with pytest.raises(ValidationError, match=f"^{re.escape(message)}$"):
        parse_checkpoint(other, "events")
    assert parse_checkpoint(other, "contacts")["at"] == "2024-01-01T00:00:00.000Z"


def test_a_record_out_of_time_order_marks_the_window_untimed() -> None:
    cursor = TimeCursor.start("events", None, T0)
    assert cursor.timed is True
    cursor.add("a", T0 + timedelta(seconds=2))
    cursor.add("b", T0 + timedelta(seconds=1))  # older than ``at``: the span is untimed
    assert cursor.timed is False
    assert cursor == TimeCursor("events", T0 + timedelta(seconds=2), set(), {"a", "b"}, False)
    # a new span restarts the time-order check (the untimed one was not saved mid-way)
    assert cursor.begin_span(T0 + timedelta(hours=1)) == T0 + timedelta(hours=1)
    assert cursor.timed is True


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (T0 + timedelta(microseconds=1_500), T0 + timedelta(milliseconds=1)),
        (T0 + timedelta(microseconds=1_001), T0 + timedelta(milliseconds=1)),
        (T0 + timedelta(microseconds=999), T0),
        (T0 + timedelta(milliseconds=7), T0 + timedelta(milliseconds=7)),
        (
            datetime(2024, 1, 1, 1, 0, 0, 2_500, tzinfo=timezone(timedelta(hours=1))),
            T0 + timedelta(milliseconds=2),
        ),
    ],
)
def test_ms_floor_cuts_to_the_millisecond_in_utc(
    zone_new_york: None, when: datetime, expected: datetime
) -> None:
    got = ms_floor(when)
    assert got == expected
    assert got.tzinfo is UTC


def test_a_nested_records_time_is_its_created_at() -> None:
    nested = msgspec.json.decode(
        b'{"event":{"type":"visit","id":"n1"},"when":{"createdAt":"2024-01-01T00:00:02Z"},'
        b'"date":"2020-01-01T00:00:00Z"}',
        type=Event,
    )
    assert event_times([nested]) == [T0 + timedelta(seconds=2)] == [event_time(nested)]


def test_a_checkpoint_round_trips_every_id() -> None:
    cursor = TimeCursor("events", T0 + timedelta(milliseconds=5), {"c1", "c2"}, {"f1", "f2"})
    restored = TimeCursor.start("events", cursor.encode(), T0)
    assert (restored.at, restored.carry, restored.fresh) == (cursor.at, cursor.carry, cursor.fresh)


def test_a_damaged_checkpoint_is_refused_quoting_60_characters() -> None:
    damaged = '{"v":1,"kind":"events","carry":[],"fresh":[],"note":"' + "y" * 80 + '"}'
    message = f"a damaged events checkpoint: {damaged[:60]!r}"
    with pytest.raises(ValidationError, match=f"^{re.escape(message)}$"):
        TimeCursor.start("events", damaged, T0)


def test_a_page_all_at_the_current_millisecond_keeps_what_is_there() -> None:
    cursor = TimeCursor("events", T0, {"c1"}, {"f1"})
    cursor.add_page(
        ["x", "y"], [T0 + timedelta(microseconds=200), T0 + timedelta(microseconds=900)]
    )
    assert (cursor.at, cursor.carry, cursor.fresh) == (T0, {"c1"}, {"f1", "x", "y"})


def test_completing_at_the_cursors_own_time_changes_nothing() -> None:
    cursor = TimeCursor("events", T0, {"c1"}, {"f1"})
    cursor.complete(T0 + timedelta(microseconds=300))  # the same millisecond
    assert (cursor.at, cursor.carry, cursor.fresh, cursor.timed) == (T0, {"c1"}, {"f1"}, True)


def test_after_a_window_completes_timed_records_move_the_cursor_again() -> None:
    cursor = TimeCursor.start("events", None, T0)
    cursor.add("untimed", None)
    assert cursor.timed is False
    end = T0 + timedelta(hours=1)
    cursor.complete(end)
    assert cursor.timed is True  # without begin_span(): a new span starts timed
    cursor.add("later", end + timedelta(seconds=1))
    assert (cursor.at, cursor.carry, cursor.fresh) == (end + timedelta(seconds=1), set(), {"later"})


async def test_a_stop_while_it_waits_for_space_keeps_the_dropped_write(tmp_path: Path) -> None:
    # the daemon waits for space between two tries; a stop in that wait dropped the write
    # without saying so, and `asyncwifi sync` exited 0 for a pass that did not end
    from asyncwifi.engine import DestinationFullError
    from asyncwifi.engine._copy import Stopped
    from asyncwifi.engine._sqlite import SqliteDestination
    from asyncwifi.sync import Syncer, SyncOptions

    tries = 0

    async def full() -> None:
        nonlocal tries
        tries += 1
        raise DestinationFullError("database or disk is full (test)", str(tmp_path / "x.db"))

    async with sim_client(events=5, contacts=5) as (_, api):
        store = SqliteDestination(str(tmp_path / "x.db"))
        await store.open()
        options = SyncOptions(retry_initial=60.0, retry_max=60.0)  # a stop finds it asleep
        syncer = Syncer(api, store, options=options)
        try:
            waiting = asyncio.ensure_future(syncer._retrying(full))
            while syncer.stats.store_down_since is None:
                await asyncio.sleep(0.01)
            syncer.stop()
            with pytest.raises(Stopped):
                await asyncio.wait_for(waiting, 10)
            assert tries == 1
            assert isinstance(syncer.full, DestinationFullError)
        finally:
            await store.close()
