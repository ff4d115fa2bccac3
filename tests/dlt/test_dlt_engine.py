"""The dlt source on the one exactly-once engine, against the simulator over real HTTP, into
DuckDB: each run resumes where the last committed one ended (a run cut short, a run that
failed), events that appear a few minutes after their own time are loaded by the first run
once they are a lookback old, exactly once on both record shapes (no event time is read a
third time), and records that do not decode get the sync's ids."""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

dlt = pytest.importorskip("dlt", reason="the dlt extra is absent: pip install asyncwifi[dlt]")
pytest.importorskip("duckdb", reason="dlt[duckdb] is not installed")

from dlt.pipeline.exceptions import PipelineStepFailed  # noqa: E402

from asyncwifi import ScaledClock  # noqa: E402
from asyncwifi._cursor import TimeCursor  # noqa: E402
from asyncwifi._instant import format_instant  # noqa: E402
from asyncwifi.dlt import CHECKPOINT, asyncwifi_source  # noqa: E402
from asyncwifi.engine import open_destination  # noqa: E402
from asyncwifi.models._identity import content_id  # noqa: E402
from asyncwifi.sync import Syncer, SyncOptions  # noqa: E402
from asyncwifi.testing import Simulator  # noqa: E402
from asyncwifi.testing._api_events import patch_event  # noqa: E402
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START  # noqa: E402
from tests.dlt.conftest import count, event_ids, pipeline, rows, run  # noqa: E402

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)
LOOKBACK = 600.0  # the source's default, the sync's
SHAPES = ("nested", "flat")  # with a UTC time, and without one


@contextlib.asynccontextmanager
async def platform(shape: str, events: int, speed: float = 10.0) -> AsyncIterator[Simulator]:
    """A simulator whose clock starts an hour after its events (a slow clock: a run lasts
    a few clock seconds, so "5 minutes late" stays behind the run before)."""
    clock = ScaledClock(speed, start=DEFAULT_EVENTS_END + 3600)
    async with Simulator(
        clock=clock, events=events, contacts=10, rate_limit_mode="off", event_shape=shape
    ) as sim:
        yield sim


def later(sim: Simulator, seconds: float) -> None:
    """Move the simulator's (and its clients') clock ``seconds`` ahead at once: the time
    between two runs, without waiting for it."""
    clock = sim.clock
    assert isinstance(clock, ScaledClock)
    clock.start += seconds


def events_source(sim: Simulator, **options: Any) -> Any:
    """The events resource alone, from SINCE to now."""
    options.setdefault("date_start", SINCE)
    return asyncwifi_source(sim.client(), **options).with_resources("events")


def checkpoint(target: Any) -> TimeCursor:
    """The events feed's checkpoint, as the last committed run left it in dlt's state."""
    state = target.state["sources"]["asyncwifi"]["resources"]["events"]
    return TimeCursor.start("events", state[CHECKPOINT], SINCE)


def reread(sim: Simulator, at: datetime) -> int:
    """The simulator's events the lookback of a run resumed at ``at`` reads again."""
    low, high = at.timestamp() - LOOKBACK, at.timestamp()
    return sum(1 for t in sim.data.events.times if low <= t < high)


def loaded_once(home: Path, sim: Simulator) -> None:
    """Every event of the simulator in the table exactly once (none twice, none missing)."""
    ids = Counter(event_ids(home))
    assert not [i for i, n in ids.items() if n > 1], "loaded twice"
    assert set(ids) == set(sim.data.event_ids())


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_run_cut_short_and_a_run_that_fails_resume_exactly_once(
    dlt_home: Path, shape: str
) -> None:
    async with platform(shape, events=500) as sim:
        target = pipeline(dlt_home)
        # run 1 stops after two batches (dlt's add_limit): its state covers exactly those
        first = events_source(sim, events_page_size=50)
        first.resources["events"].add_limit(2)
        done = (await run(target, first))["events"]
        assert 0 < done < 500
        at = checkpoint(target).at

        # run 2 fails after its first batch: neither its rows nor its state are committed
        def boom(row: Any) -> Any:
            raise RuntimeError("the pipeline fails")

        failing = events_source(sim, events_page_size=50)
        failing.resources["events"].add_map(boom)
        with pytest.raises(PipelineStepFailed, match="the pipeline fails"):
            await run(target, failing)
        assert checkpoint(target).at == at

        # run 3 resumes where run 1 ended: the rest; run 1 read its events long after their
        # time (a lookback old: its checkpoint's watermark says so), so none is read again
        assert (await run(target, events_source(sim)))["events"] == 500 - done
        loaded_once(dlt_home, sim)
        assert count(dlt_home, "select count(*) from wifi.events") == 500


@pytest.mark.parametrize("shape", SHAPES)
async def test_events_five_minutes_late_are_loaded_by_the_next_run_exactly_once(
    dlt_home: Path, shape: str
) -> None:
    async with platform(shape, events=300) as sim:
        target = pipeline(dlt_home)
        await run(target, events_source(sim))
        loaded_once(dlt_home, sim)
        at = checkpoint(target).at
        assert reread(sim, at) == 0  # the simulator's events end an hour before its clock

        # between the runs: events dated 5 minutes ago, behind the first run's end (late),
        # and a few on time
        now = sim.clock.now()
        late = sim.data.add_events(40, at=now - 310, until=now - 300)
        assert now - 300 < at.timestamp()
        on_time = sim.data.add_events(3)

        later(sim, LOOKBACK)  # the next run comes once they are a lookback old
        loaded = await run(target, events_source(sim))
        assert loaded["events"] == len(late) + len(on_time)  # the lookback found them
        loaded_once(dlt_home, sim)

        # a third run finds nothing new and reads no event time a third time
        loaded = await run(target, events_source(sim))
        assert loaded.get("events", 0) == 0
        loaded_once(dlt_home, sim)
        assert count(dlt_home, "select count(*) from wifi.events") == 343


async def test_a_date_end_in_the_future_ends_the_run_at_the_present(dlt_home: Path) -> None:
    async with platform("nested", events=200) as sim:
        target = pipeline(dlt_home)
        future = datetime.fromtimestamp(sim.clock.now() + 86_400, UTC)
        await run(target, events_source(sim, date_end=future))  # not a day of polling
        loaded_once(dlt_home, sim)
        at = checkpoint(target).at
        assert at.timestamp() <= sim.clock.now()
        # the next run goes on from there: what appeared since is loaded, once
        added = sim.data.add_events(5)
        loaded = await run(target, events_source(sim, date_end=future))
        assert loaded["events"] == len(added) + reread(sim, at)
        loaded_once(dlt_home, sim)


async def test_a_pipeline_of_the_source_before_the_feeds_goes_on_from_its_range_end(
    dlt_home: Path,
) -> None:
    # that source kept the end of the last range it loaded whole as ``range_end``
    middle = SINCE + (UNTIL - SINCE) / 2

    @dlt.source(name="asyncwifi")
    def before() -> Any:
        @dlt.resource(name="events", primary_key="id", write_disposition="merge")
        def events() -> Any:
            dlt.current.resource_state()["range_end"] = format_instant(middle)
            yield from ()

        return events

    async with platform("flat", events=300) as sim:
        target = pipeline(dlt_home)
        await run(target, before())
        loaded = await run(target, events_source(sim))  # date_start=SINCE, a month before
        assert loaded["events"] == len(sim.data.event_ids(middle)) < 300


async def test_the_lookback_keeps_to_the_event_types_asked_for(dlt_home: Path) -> None:
    async with platform("nested", events=300) as sim:
        target = pipeline(dlt_home)
        visits = events_source(sim, event_types=["visit"])
        await run(target, visits)
        now = sim.clock.now()
        sim.data.add_events(60, at=now - 300, until=now - 200)  # late, of every type
        later(sim, LOOKBACK)
        await run(target, events_source(sim, event_types=["visit"]))
        assert Counter(event_ids(dlt_home)) == Counter(sim.data.event_ids(types=["visit"]))
        assert {r[0] for r in rows(dlt_home, "select event__type from wifi.events")} == {"visit"}


@pytest.mark.parametrize("shape", SHAPES)
async def test_records_that_do_not_decode_get_the_sync_s_ids(
    dlt_home: Path, tmp_path: Path, shape: str
) -> None:
    async with platform(shape, events=300) as sim:
        events = sim.data.events
        no_id = {"event": {"type": "visit"}} if shape == "nested" else {"id": None}
        patch_event(events, 10, visit="broken")  # does not decode; its id is still there
        patch_event(events, 20, visit="broken", **no_id)  # does not decode, and has no id
        patch_event(events, 30, **no_id)  # decodes, with no id
        odd = {
            events.event_id(10): events.times[10],
            content_id(events.event_json(20)): events.times[20],
            content_id(events.event_json(30)): events.times[30],
        }
        await run(pipeline(dlt_home), events_source(sim, events_page_size=100))
        loaded = Counter(event_ids(dlt_home))
        assert sum(loaded.values()) == len(loaded) == 300  # every record once, the odd ones too
        assert set(odd) <= set(loaded)

        # the sync sets the same three aside, under the same ids
        url = f"sqlite:///{tmp_path / 'sync.db'}"
        store = open_destination(url)
        await store.open()
        try:
            options = SyncOptions(since=SINCE, until=UNTIL, page_size=100)
            async with sim.client() as api:
                await Syncer(api, store, options=options).sync_events()
        finally:
            await store.close()
        with sqlite3.connect(tmp_path / "sync.db") as conn:
            letters = {r[0] for r in conn.execute("SELECT record_id FROM sync_dead_letters")}
        assert letters == set(odd)

        # each with the event's UTC time, read from its bytes, where the record carries one
        times = dict(rows(dlt_home, "select id, epoch(event_time) from wifi.events"))
        expected = {i: t if shape == "nested" else None for i, t in odd.items()}
        assert {i: times[i] for i in odd} == expected
