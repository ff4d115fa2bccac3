"""Durability: the output's bytes reach the disk before the state commit that counts them.

The state file says "the output holds ``offset`` bytes"; a power loss right after that
commit must not leave a shorter output behind (the next run would refuse the file, or,
worse, count bytes that are not there). So every commit of the state
(``JsonlDestination._commit``) must come after an fsync of the output made when the file already
held ``offset`` bytes. A spy on the syncs (``os.fsync`` and ``os.fdatasync``, on the
output's inode only) and on the state's commit writes one ordered log; the log is checked
commit by commit. Over real HTTP against the simulator, on every record shape, with
concurrent slices (group commits), gzip, a contact export, and a resume that cuts back a
torn tail first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import ScaledClock
from asyncwifi.backfill import ExportJob, contacts_export, events_backfill
from asyncwifi.engine._jsonl import JsonlDestination
from asyncwifi.testing import Simulator
from tests.backfill._disk import spy_on_disk
from tests.client._support import NO_LIMITS, client_for

SINCE = datetime(2024, 1, 1, tzinfo=UTC)
UNTIL = datetime(2024, 1, 3, tzinfo=UTC)


def sim(shape: str = "nested") -> Simulator:
    return Simulator(
        clock=ScaledClock(400.0),
        events=3_000,
        contacts=250,
        events_start=SINCE,
        events_end=SINCE + timedelta(days=3),
        event_shape=shape,
        rate_limit_mode="off",
    )


def backfill(api: Any, tmp_path: Path, *, gzip: bool = False) -> ExportJob:
    return events_backfill(
        api,
        since=SINCE,
        until=UNTIL,
        out=tmp_path / ("events.jsonl.gz" if gzip else "events.jsonl"),
        state=tmp_path / "state",
        slice_size=timedelta(hours=6),
        page_size=100,
        concurrency=4,
        gzip=gzip,
    )


@pytest.mark.parametrize(
    ("shape", "gzip"), [("nested", False), ("flat", False), ("dated", False), ("nested", True)]
)
async def test_every_commit_follows_the_fsync_of_the_bytes_it_records(
    tmp_path: Path, shape: str, gzip: bool
) -> None:
    async with sim(shape) as server, client_for(server, limits=NO_LIMITS) as api:
        job = backfill(api, tmp_path, gzip=gzip)
        with spy_on_disk(job.out_path) as log:
            outcome = await job.run()
    assert outcome.status == "done"
    log.check_order()
    commits = log.commits()
    # the last commit counts the whole file: all of it was synced before
    assert commits[-1] == job.out_path.stat().st_size > 0
    assert len(commits) > 4  # several group commits, not one at the end


async def test_a_contact_export_syncs_before_each_commit(tmp_path: Path) -> None:
    async with sim() as server, client_for(server, limits=NO_LIMITS) as api:
        out = tmp_path / "contacts.jsonl"
        job = contacts_export(api, out=out, state=tmp_path / "state", page_size=40)
        with spy_on_disk(out) as log:
            outcome = await job.run()
    assert outcome.status == "done"
    log.check_order()
    assert len(log.commits()) >= 250 // 40
    assert log.commits()[-1] == out.stat().st_size


class Stop(BaseException):
    """Stands for kill -9 in the middle of a run (no handler catches it)."""


def stopped(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(stopped(e) for e in exc.exceptions)
    return isinstance(exc, Stop)


async def test_a_resumed_run_syncs_before_each_commit_too(tmp_path: Path) -> None:
    async with sim() as server, client_for(server, limits=NO_LIMITS) as api:
        real_commit = JsonlDestination._commit
        calls = 0

        def stop_after_three(self: JsonlDestination, conn: Any, writes: Any) -> list[int]:
            nonlocal calls
            calls += 1
            if calls > 3:
                raise Stop
            return real_commit(self, conn, writes)

        first = backfill(api, tmp_path)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(JsonlDestination, "_commit", stop_after_three)
            with pytest.raises(BaseException) as caught:
                await first.run()
        assert stopped(caught.value)
        committed = JsonlDestination.read_only(tmp_path / "state").offset
        assert committed > 0
        with first.out_path.open("ab") as f:
            f.write(b'{"torn": ')  # a page being written when the process died
        with spy_on_disk(first.out_path) as log:
            outcome = await backfill(api, tmp_path).run()
    assert outcome.status == "done"
    # nothing of this run is durable before its first sync: the output is cut back to
    # ``committed`` and every commit past it must follow a sync that covers it
    log.check_order(durable=0)
    # (a commit that only closes a slice records no bytes: it keeps the committed length)
    assert min(log.commits()) >= committed
    assert max(log.commits()) > committed
    assert log.commits()[-1] == first.out_path.stat().st_size
