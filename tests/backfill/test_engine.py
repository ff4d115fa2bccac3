"""The export engine against a fake scroll: exactly once through crashes, pauses and lapses."""

from __future__ import annotations

import gzip
import itertools
import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi._instant import format_instant
from asyncwifi.backfill import ExportJob, Progress, Reporter, SliceIncompleteError, events_backfill
from asyncwifi.backfill._plan import plan_slices
from asyncwifi.engine import DestinationNotWritableError, StateMismatchError
from asyncwifi.engine._jsonl import JobParams, JsonlDestination
from asyncwifi.engine._jsonl_output import JsonlOutput, encode_lines
from asyncwifi.engine._jsonl_preflight import preflight
from tests._virtualclock import VirtualClock
from tests.backfill._disk import spy_on_disk
from tests.backfill.fakes import FakeApi, FakeServer, make_events, raw_of

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAYS = 4


class Crash(BaseException):
    """Stands for kill -9: nothing after it runs (BaseException, so no handler catches it)."""


class Kill:
    """Counts down to the simulated kill; once dead, stays dead."""

    def __init__(self, countdown: int) -> None:
        self.countdown = countdown
        self.dead = False

    def tick(self) -> bool:
        self.countdown -= 1
        self.dead = self.dead or self.countdown == 0
        return self.countdown == 0


def assert_exactly_once(path: Path, events: list[Any]) -> None:
    counts = ids_in(path)
    assert set(counts) == {e.id for e in events}, "an event is missing"
    assert max(counts.values()) == 1, "an event was written twice"


def crashed(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(crashed(e) for e in exc.exceptions)
    return isinstance(exc, Crash)


def params(tmp_path: Path, **kw: Any) -> JobParams:
    base: dict[str, Any] = {
        "kind": "events",
        "out": str(tmp_path / "out.jsonl"),
        "since": T0.isoformat(),
        "until": (T0 + timedelta(days=DAYS)).isoformat(),
        "slice_seconds": 86_400,
    }
    base.update(kw)
    return JobParams(**base)


def job(tmp_path: Path, server: FakeServer, **kw: Any) -> ExportJob:
    p = kw.pop("params", None) or params(tmp_path, gzip=kw.pop("gzip", False))
    kw.setdefault("page_size", server.page_size)
    return events_backfill(
        FakeApi(server),  # type: ignore[arg-type]
        since=T0,
        until=T0 + timedelta(days=DAYS),
        slice_size=timedelta(days=1),
        out=Path(p.out),
        gzip=p.gzip,
        types=p.types,
        state=tmp_path / "out.state",
        **kw,
    )


def read_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.splitlines()


def ids_in(path: Path) -> Counter[str]:
    return Counter(json.loads(line)["id"] for line in read_lines(path))


@pytest.fixture
def events() -> list[Any]:
    return make_events(900, T0, timedelta(days=DAYS))


async def test_every_event_written_once_as_the_servers_own_bytes(
    tmp_path: Path, events: list[Any]
) -> None:
    server = FakeServer(events, page_size=40)
    outcome = await job(tmp_path, server, concurrency=3).run()
    assert outcome.status == "done"
    lines = read_lines(tmp_path / "out.jsonl")
    assert sorted(lines) == sorted(raw_of(e) for e in events)
    assert outcome.progress.records == len(events)
    assert outcome.progress.requests_run == server.requests
    # the fake always ends a scroll with an empty page: exactly a page per 40 of each
    # slice, plus that closing request; the floor (DESIGN) is ceil(900 / 40) + one closing
    # request per scroll, and each of the 3 cuts between the 4 daily slices may split a
    # page in two (+ 3)
    per_slice = [
        len(server.select(s.date_start, s.date_end))
        for s in plan_slices(T0, T0 + timedelta(days=DAYS), timedelta(days=1))
    ]
    assert server.requests == sum(-(-n // 40) + 1 for n in per_slice)
    assert server.requests <= -(-len(events) // 40) + DAYS + (DAYS - 1)
    assert JsonlDestination.read_only(tmp_path / "out.state").done


async def test_a_finished_job_run_again_sends_nothing(tmp_path: Path, events: list[Any]) -> None:
    server = FakeServer(events)
    await job(tmp_path, server).run()
    before = server.requests
    outcome = await job(tmp_path, server).run()
    assert outcome.status == "done"
    assert server.requests == before
    assert sum(ids_in(tmp_path / "out.jsonl").values()) == len(events)


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("seed", range(6))
async def test_crash_at_random_moments_then_resume_writes_each_event_once(
    tmp_path: Path, events: list[Any], seed: int, compress: bool
) -> None:
    """A crash while writing, between the write and the commit, or inside a stream."""
    rnd = random.Random(seed)
    server = FakeServer(events, page_size=30)
    out = tmp_path / ("out.jsonl.gz" if compress else "out.jsonl")
    p = params(tmp_path, out=str(out), gzip=compress)
    original_append = JsonlOutput.append_many
    original_commit = JsonlDestination._commit
    crashes = 0
    for attempt in range(40):
        kinds = ["mid-write", "after-write", "mid-stream"] + (["none"] if attempt >= 4 else [])
        where = rnd.choice(kinds)
        # after the "kill", nothing reaches the disk any more: no other slice's commit,
        # no rollback (as with kill -9, where no code runs at all)
        kill = Kill(rnd.randrange(1, 12))

        def append(self: JsonlOutput, chunks: list[bytes], _w: str = where, _k: Kill = kill) -> int:
            if _k.dead:
                raise Crash
            if _w == "mid-write" and _k.tick():
                whole = b"".join(chunks)
                original_append(self, [whole[: len(whole) // 2]])  # a torn write
                raise Crash
            offset = original_append(self, chunks)
            if _w == "after-write" and _k.tick():
                raise Crash  # written and fsync'ed, never committed
            return offset

        def commit(self: JsonlDestination, conn: Any, writes: Any, _k: Kill = kill) -> list[int]:
            if _k.dead:
                raise Crash
            return original_commit(self, conn, writes)

        def rollback(self: JsonlOutput, offset: int, _k: Kill = kill) -> None:
            assert _k.dead

        def on_page(_w: str = where, _k: Kill = kill) -> None:
            if _k.dead or (_w == "mid-stream" and _k.tick()):
                raise Crash

        server.on_page = on_page
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(JsonlOutput, "append_many", append)
                mp.setattr(JsonlOutput, "rollback", rollback)
                mp.setattr(JsonlDestination, "_commit", commit)
                outcome = await job(tmp_path, server, params=p, concurrency=2).run()
        except BaseException as exc:
            if not crashed(exc):
                raise
            crashes += 1
            continue
        assert outcome.status == "done"
        break
    else:
        pytest.fail("never finished")
    assert crashes > 0
    assert_exactly_once(out, events)


async def test_quota_exhausted_pauses_with_the_reset_time_and_the_next_run_resumes(
    tmp_path: Path, events: list[Any]
) -> None:
    clock = VirtualClock.stepping(T0.timestamp() + 3_600)
    server = FakeServer(events, page_size=25, quota=11, clock=clock)
    first = await job(tmp_path, server, concurrency=2).run()
    assert first.status == "paused"
    assert first.reset_at == (T0 + timedelta(days=1)).timestamp()
    written = sum(ids_in(tmp_path / "out.jsonl").values())
    assert 0 < written < len(events)
    runs = 1
    while True:
        clock.step(86_400)  # the next day: the quota is back
        outcome = await job(tmp_path, server, concurrency=2).run()
        runs += 1
        if outcome.status == "done":
            break
    assert_exactly_once(tmp_path / "out.jsonl", events)
    assert runs >= 3


async def test_wait_mode_sleeps_until_the_reset_and_finishes(
    tmp_path: Path, events: list[Any]
) -> None:
    seen: list[tuple[float, bool]] = []

    class Spy(Reporter):
        def paused(self, progress: Progress, *, reset_at: float, waiting: bool) -> None:
            seen.append((reset_at, waiting))

    clock = VirtualClock.stepping(T0.timestamp() + 80_000)
    server = FakeServer(events, page_size=25, quota=30, clock=clock)
    outcome = await job(tmp_path, server, wait=True, reporter=Spy()).run()
    assert outcome.status == "done"
    assert seen
    assert all(waiting for _, waiting in seen)
    assert seen[0][0] == (T0 + timedelta(days=1)).timestamp()
    assert_exactly_once(tmp_path / "out.jsonl", events)


async def test_wait_mode_with_a_max_wait_shorter_than_the_reset_pauses(
    tmp_path: Path, events: list[Any]
) -> None:
    clock = VirtualClock.stepping(T0.timestamp() + 3_600)
    server = FakeServer(events, page_size=25, quota=5, clock=clock)
    outcome = await job(tmp_path, server, wait=True, max_wait=600.0).run()
    assert outcome.status == "paused"
    assert clock.now() == T0.timestamp() + 3_600  # it did not sleep


async def test_a_server_that_rounds_its_date_filter_does_not_cause_duplicates(
    tmp_path: Path,
) -> None:
    # events in the last and first second around each midnight, where slices meet
    evs = make_events(300, T0, timedelta(days=DAYS))
    for day in range(1, DAYS):
        edge = T0 + timedelta(days=day)
        for k in range(20):
            moment = edge + timedelta(milliseconds=k * 97 - 1000)
            evs.append(
                type(evs[0])(
                    id=f"edge-{day}-{k}",
                    date=moment.strftime("%Y-%m-%dT%H:%M:%S.")
                    + f"{moment.microsecond // 1000:03d}Z",
                )
            )
    server = FakeServer(evs, page_size=30, round_end_up=True)
    await job(tmp_path, server, concurrency=4).run()
    assert_exactly_once(tmp_path / "out.jsonl", evs)


async def test_a_resumed_slice_narrows_its_start_to_the_cursor_and_skips_what_it_has(
    tmp_path: Path, events: list[Any]
) -> None:
    server = FakeServer(events, page_size=20)
    pages = 0

    def on_page() -> None:
        nonlocal pages
        pages += 1
        if pages == 4:
            raise Crash

    # one slice at a time: the crash at the 4th page comes after slice 0 committed pages
    server.on_page = on_page
    with pytest.raises(BaseException) as caught:
        await job(tmp_path, server, concurrency=1).run()
    assert crashed(caught.value)
    server.on_page = None
    server.opened.clear()
    await job(tmp_path, server, concurrency=1).run()
    first = server.opened[0]
    # slice 0 reads on from its cursor (what is at the cursor comes again: dropped by id)
    assert first.date_start > format_instant(T0)
    assert_exactly_once(tmp_path / "out.jsonl", events)


async def test_a_lapsed_scroll_is_restarted_and_nothing_repeats(
    tmp_path: Path, events: list[Any]
) -> None:
    server = FakeServer(events, page_size=20, expire_after_pages=2)
    await job(tmp_path, server).run()
    assert_exactly_once(tmp_path / "out.jsonl", events)


async def test_an_end_after_a_short_page_costs_no_extra_request(
    tmp_path: Path, events: list[Any]
) -> None:
    server = FakeServer(events, page_size=1_000)  # every slice fits in one short page
    await job(tmp_path, server, page_size=1_000).run()
    assert_exactly_once(tmp_path / "out.jsonl", events)
    assert server.requests == DAYS * 2  # one page and the empty page ending each slice


async def test_a_scroll_that_lapses_before_any_page_fails_instead_of_looping(
    tmp_path: Path, events: list[Any]
) -> None:
    server = FakeServer(events, page_size=20, expire_after_pages=0)
    with pytest.raises(ExceptionGroup) as caught:
        await job(tmp_path, server).run()
    assert caught.group_contains(SliceIncompleteError, match="cannot be proved complete")


def test_preflight_refuses_an_output_that_exists_without_state_and_writes_nothing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "mine"}\n')
    with pytest.raises(StateMismatchError, match="no state file"):
        preflight(params(tmp_path), state_path=tmp_path / "out.state", out_path=out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    assert out.read_text() == '{"id": "mine"}\n'


async def test_preflight_refuses_a_state_made_for_another_job(
    tmp_path: Path, events: list[Any]
) -> None:
    await job(tmp_path, FakeServer(events)).run()
    other = params(tmp_path, types=("visit",))
    with pytest.raises(StateMismatchError, match="types"):
        preflight(other, state_path=tmp_path / "out.state", out_path=tmp_path / "out.jsonl")
    with pytest.raises(StateMismatchError, match="types"):
        await job(tmp_path, FakeServer(events), params=other).run()


async def test_an_output_shorter_than_committed_is_refused(
    tmp_path: Path, events: list[Any]
) -> None:
    await job(tmp_path, FakeServer(events)).run()
    out = tmp_path / "out.jsonl"
    out.write_bytes(out.read_bytes()[:100])
    with pytest.raises(StateMismatchError, match="truncated"):
        preflight(params(tmp_path), state_path=tmp_path / "out.state", out_path=out)


@pytest.mark.parametrize("where", ["missing-dir", "is-dir"])
def test_preflight_refuses_an_unwritable_output(tmp_path: Path, where: str) -> None:
    out = tmp_path / "nope" / "out.jsonl" if where == "missing-dir" else tmp_path
    with pytest.raises(DestinationNotWritableError):
        preflight(params(tmp_path, out=str(out)), state_path=tmp_path / "s", out_path=out)
    assert list(tmp_path.iterdir()) == []


async def test_a_job_that_cannot_open_its_output_leaves_no_state_behind(
    tmp_path: Path, events: list[Any]
) -> None:
    p = params(tmp_path, out=str(tmp_path / "missing" / "out.jsonl"))
    with pytest.raises(FileNotFoundError):
        await job(tmp_path, FakeServer(events), params=p).run()
    assert list(tmp_path.iterdir()) == []


def test_encode_lines_keeps_one_record_per_line() -> None:
    assert encode_lines([b'{"a":1}', b'{\n  "b": "x\\ny"\r\n}']) == (
        b'{"a":1}\n{   "b": "x\\ny"  }\n'
    )
    assert encode_lines([]) == b""


async def test_a_failed_write_is_cut_back_and_the_next_run_writes_each_event_once(
    tmp_path: Path, events: list[Any]
) -> None:
    original = JsonlOutput.append_many
    calls = 0

    def flaky(self: JsonlOutput, chunks: list[bytes]) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:  # a group commit in the middle of the job
            original(self, [b"".join(chunks)[:100]])  # part of it reached the file
            raise OSError(28, "No space left on device")
        return original(self, chunks)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(JsonlOutput, "append_many", flaky)
        with pytest.raises(ExceptionGroup) as caught:
            await job(tmp_path, FakeServer(events, page_size=30), concurrency=3).run()
    assert caught.group_contains(OSError)
    # what the state says was written is exactly what the file holds
    info = JsonlDestination.read_only(tmp_path / "out.state")
    assert (tmp_path / "out.jsonl").stat().st_size == info.offset
    await job(tmp_path, FakeServer(events, page_size=30), concurrency=3).run()
    assert_exactly_once(tmp_path / "out.jsonl", events)


async def test_concurrent_slices_share_fsyncs(tmp_path: Path, events: list[Any]) -> None:
    """One fsync per group commit: never none (durability), never one per page."""
    import os
    import time

    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.005)  # a disk that takes its time: pages queue meanwhile
        real_fsync(fd)

    server = FakeServer(events, page_size=10)
    concurrency = 4
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "fsync", slow_fsync)
        with spy_on_disk(tmp_path / "out.jsonl") as disk:
            outcome = await job(tmp_path, server, concurrency=concurrency).run()
    assert_exactly_once(tmp_path / "out.jsonl", events)
    disk.check_order()
    pages, syncs = outcome.progress.pages_run, len(disk.syncs())
    commits = disk.commits()
    # every commit of pages writes bytes (a fake page is never empty), and each is one
    # group; the others only say a slice is done (a checkpoint, no bytes, no fsync)
    growing = sum(1 for before, after in itertools.pairwise([0, *commits]) if after > before)
    assert len(commits) - growing <= DAYS
    assert syncs == growing  # exactly one fsync per group commit
    # a worker waits for its page's commit before its next page: a group holds at most one
    # page per concurrent slice, so at least pages / concurrency groups; sharing: fewer
    # groups than pages
    assert -(-pages // concurrency) <= syncs < pages
