"""Fencing (SQLite and PostgreSQL): once a second holder took an organization's lease, the
first one's next write raises ``LeaseLostError`` and stores nothing of its batch (rows,
dead letters, deletes, checkpoint), while the new holder's writes land; the Syncer does not
retry it. PostgreSQL, two connections: a lease taken while a write's transaction is open
waits for its commit, and the write after it is refused."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from asyncwifi.engine import Destination, LeaseLostError, Write, open_destination
from asyncwifi.engine._destination import rows_of
from asyncwifi.engine._feeds import BadRecord
from asyncwifi.errors import AsyncWifiError
from asyncwifi.sync import Syncer, SyncOptions
from tests.sync.conftest import Recording, pg_database, pg_lock, require_postgres, sim_client
from tests.sync.test_organizations import SINCE, UNTIL
from tests.sync.test_sync_pass import rows
from tests.sync.test_sync_units import _events

ORG = "org-fenced"


def _batch(first: int, last: int, checkpoint: str) -> Write:
    """Events ``first`` .. ``last - 1``, a dead letter, and the checkpoint."""
    bad = BadRecord(f"bad {checkpoint}".encode(), "does not decode (test)", f"bad-{checkpoint}")
    return Write(
        "events",
        rows_of(_events(last))[first:],
        [bad],
        checkpoints={"events": checkpoint},
    )


@contextlib.asynccontextmanager
async def _two_holders(db_url: str, shared: bool) -> AsyncIterator[tuple[Destination, Destination]]:
    first = open_destination(db_url, organization=ORG)
    await first.open()
    second = first.for_organization(ORG) if shared else open_destination(db_url, organization=ORG)
    await second.open()
    try:
        yield first, second
    finally:
        await second.close()
        await first.close()


@pytest.mark.parametrize("shared", [False, True], ids=["two-connections", "two-views"])
async def test_a_writer_whose_lease_was_taken_writes_nothing(db_url: str, shared: bool) -> None:
    async with _two_holders(db_url, shared) as (a, b):
        assert a.lease is None
        assert await a.take_lease("worker-a") == 1
        assert a.lease == 1
        assert await a.write(_batch(0, 10, "one")) == 11  # 10 rows and a dead letter
        assert await b.take_lease("worker-b") == 2
        with pytest.raises(LeaseLostError) as lost:
            await a.write(_batch(10, 30, "two"))
        assert isinstance(lost.value, AsyncWifiError)
        assert (lost.value.organization, lost.value.token, lost.value.current) == (ORG, 1, 2)
        for part in (ORG, "token 1", "token 2"):
            assert part in str(lost.value)
        # nothing of the refused batch: its rows, its dead letter, its checkpoint
        assert await b.count("events") == 10
        assert await b.checkpoint("events") == "one"
        letters = await rows(db_url, "SELECT record_id FROM sync_dead_letters")
        assert letters == [("bad-one",)]
        with pytest.raises(LeaseLostError):  # and refused for good
            await a.write(Write("events", checkpoints={"events": "three"}))
        # the new holder's writes land
        assert await b.write(_batch(10, 30, "two")) == 21
        assert await b.count("events") == 30
        assert await a.checkpoint("events") == "two"  # reads are not fenced
        # the lease row: the holder and its token
        held = await rows(db_url, "SELECT organization_id, token, holder FROM sync_leases")
        assert held == [(ORG, 2, "worker-b")]


async def test_a_lease_fences_its_organization_only(db_url: str) -> None:
    async with _two_holders(db_url, shared=True) as (a, b):
        other = a.for_organization("org-other")
        await a.take_lease("worker-a")
        await b.take_lease("worker-b")
        # another organization, without a lease: writes as before; its first lease is 1
        assert await other.write(_batch(0, 5, "x")) == 6
        assert await other.take_lease("worker-c") == 1
        assert await other.write(_batch(5, 6, "y")) == 2


async def test_the_syncer_does_not_retry_a_lost_lease(db_url: str) -> None:
    async with (
        sim_client(events=600, contacts=10, organization=ORG) as (sim, api),
        _two_holders(db_url, shared=True) as (a, b),
    ):
        await a.take_lease("worker-a")
        await b.take_lease("worker-b")
        recording = Recording(a)
        options = SyncOptions(since=SINCE, until=UNTIL, page_size=200)
        with pytest.raises(LeaseLostError):
            await Syncer(api, recording, options=options).run_once()
        assert await a.count("events") == 0
        assert await a.checkpoint("events") is None
        # the writes in flight when it came, none tried again
        assert 1 <= recording.event_writes <= a.concurrency
        # the holder's sync runs
        await Syncer(api, b, options=SyncOptions(since=SINCE, until=UNTIL)).run_once()
        assert await b.ids("events") == set(sim.data.event_ids())


async def _when(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait until ``check()`` holds (polling the database: no fixed sleep)."""
    try:
        async with asyncio.timeout(30):
            while not await check():
                await asyncio.sleep(0.02)
    except TimeoutError:
        pytest.fail(f"never: {what}")


@pytest.mark.postgres
async def test_postgres_a_lease_taken_during_a_write_waits_for_its_commit() -> None:
    require_postgres()
    with pg_lock(exclusive=False):
        async with pg_database() as url:
            a = open_destination(url, organization=ORG)
            b = open_destination(url, organization=ORG)  # another process's connections
            await a.open()
            await b.open()
            try:
                await a.take_lease("worker-a")
                # hold A's transaction open once its lease row is locked (before its commit)
                locked, release = asyncio.Event(), asyncio.Event()
                finish = a._finish  # type: ignore[attr-defined]

                async def held(*args: Any) -> int:
                    locked.set()
                    await release.wait()
                    return int(await finish(*args))

                a._finish = held  # type: ignore[attr-defined]
                writing = asyncio.create_task(a.write(_batch(0, 10, "one")))
                await locked.wait()
                taking = asyncio.create_task(b.take_lease("worker-b"))

                async def b_waits_on_a_lock() -> bool:
                    waiting = await rows(
                        url,
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()",
                    )
                    return bool(waiting[0][0] == 1)

                await _when(b_waits_on_a_lock, "B's take_lease waits for A's row lock")
                assert not taking.done()
                release.set()
                assert await writing == 11  # A held the lease when it committed
                assert await taking == 2
                a._finish = finish  # type: ignore[attr-defined]
                with pytest.raises(LeaseLostError):
                    await a.write(_batch(10, 20, "two"))
                assert await b.count("events") == 10
                assert await b.checkpoint("events") == "one"
            finally:
                await b.close()
                await a.close()


# -- one ``asyncwifi sync`` at a time: a lease held, kept, released, expired (issue 33) --------


async def test_a_held_lease_is_refused_naming_its_holder_until_released(db_url: str) -> None:
    from asyncwifi.engine._lease import LeaseHeldError, LeaseKeeper

    async with _two_holders(db_url, shared=False) as (a, b):
        first = LeaseKeeper(a, holder="sync one", ttl=60.0)
        second = LeaseKeeper(b, holder="sync two", ttl=60.0)
        assert await first.claim() == 1
        with pytest.raises(LeaseHeldError) as held:
            await second.claim()
        assert held.value.holder == "sync one"
        assert "sync one" in str(held.value)
        assert "holds until" in str(held.value)
        assert b.lease is None
        await first.release()
        assert await second.claim() == 2  # released: taken at once
        with pytest.raises(LeaseLostError):
            await a.write(_batch(0, 5, "stale"))  # the first is fenced off


async def test_a_lease_no_longer_stamped_expires_and_its_holder_is_told(db_url: str) -> None:
    from asyncwifi.engine._lease import LeaseKeeper

    async with _two_holders(db_url, shared=False) as (a, b):
        first = LeaseKeeper(a, holder="killed", ttl=0.3)
        assert await first.claim() == 1
        await asyncio.sleep(0.4)  # never stamped: expired
        second = LeaseKeeper(b, holder="next", ttl=0.3)
        assert await second.claim(wait=True) == 2
        lost: list[LeaseLostError] = []
        await asyncio.wait_for(first.keep(lost.append), 5)  # its next stamp finds it gone
        assert first.lost is not None
        assert lost == [first.lost]


# -- a lease whose holder is dead does not outlive it (issue 40) --------------------------------


def _sync_holder(pid: int, host: str | None = None) -> str:
    return f"asyncwifi sync pid {pid} on {host or socket.gethostname()}"


def _dead_pid() -> int:
    """A pid no process has (one that just ended)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def test_a_dead_syncs_lease_is_taken_at_once_and_a_live_ones_is_not(db_url: str) -> None:
    """Each lease below was stamped just now (its ``ttl`` far off). Dead: a sync of this host
    whose process is gone, or, on PostgreSQL, a sync of another host whose session lock is
    gone. Alive, it keeps its lease: a sync on another host seen by a file lock only (a
    SQLite file), a process of this host that runs, a holder that is not a sync."""
    from asyncwifi.engine._lease import LeaseHeldError, LeaseKeeper

    across = db_url.startswith("postgresql")
    cases = [
        (_sync_holder(_dead_pid()), True),
        (_sync_holder(os.getppid()), False),  # alive, and not holding the lock
        (_sync_holder(4242, "another-host.example"), across),
        ("fleet-worker-1 org-fenced attempt 1", False),
    ]
    async with _two_holders(db_url, shared=False) as (first, other):
        for holder, dead in cases:
            await first.take_lease(holder)  # its stamp: now
            keeper = LeaseKeeper(other, ttl=60.0)
            if dead:
                assert await keeper.claim() >= 1, holder
                assert await other.lease_holder() is not None
                await keeper.release()
            else:
                with pytest.raises(LeaseHeldError) as held:
                    await keeper.claim()
                assert held.value.holder == holder
                await other.release_organization()


async def test_a_live_sync_holding_the_lock_keeps_its_lease_on_every_host(db_url: str) -> None:
    """The lock is what proves a sync gone: while a live sync holds it, its lease holds,
    whatever its lease row says (here, a holder of this host whose pid is gone)."""
    from asyncwifi.engine._lease import LeaseHeldError, LeaseKeeper

    async with _two_holders(db_url, shared=False) as (a, b):
        running = LeaseKeeper(a, holder=_sync_holder(_dead_pid()), ttl=60.0)
        await running.claim()
        with pytest.raises(LeaseHeldError):
            await LeaseKeeper(b, ttl=60.0).claim()
        await running.release()  # its lock goes: the next claim is at once
        assert await LeaseKeeper(b, ttl=60.0).claim() == 2
