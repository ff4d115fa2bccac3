"""The shared asyncio-to-SQLite bridge: a job that fails in any way, even with a
``BaseException`` (a crash), fails its own caller and no other, and the thread serves on.
The one rule for schema versions: the steps after the found one; a newer one refused."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
import weakref
from pathlib import Path

import pytest

from asyncwifi._sqlite import SqliteThread, pending
from asyncwifi.errors import SchemaVersionError


class Crash(BaseException):
    """Not an Exception: what a handler of ``Exception`` would never catch."""


def _crash(conn: sqlite3.Connection) -> None:
    raise Crash


def bridge_on(tmp_path: Path, group_commit: bool) -> SqliteThread:
    """A bridge to a fresh database file in ``tmp_path`` (not started)."""
    return SqliteThread(
        lambda: sqlite3.connect(tmp_path / "x.db", isolation_level=None, check_same_thread=False),
        name="test-bridge",
        group_commit=group_commit,
    )


@pytest.mark.parametrize("group_commit", [False, True])
async def test_a_crashing_job_fails_its_caller_and_the_thread_serves_on(
    tmp_path: Path, group_commit: bool
) -> None:
    bridge = bridge_on(tmp_path, group_commit)
    await bridge.start()
    try:
        await bridge.run(lambda conn: conn.execute("CREATE TABLE t (x)"))
        with pytest.raises(Crash):
            await asyncio.wait_for(bridge.run(_crash), timeout=10)
        await bridge.run(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
        rows = await bridge.run(lambda conn: conn.execute("SELECT x FROM t").fetchall())
        assert rows == [(1,)]
    finally:
        await bridge.close()


def test_pending_runs_the_missing_steps_and_refuses_a_newer_schema() -> None:
    steps = ("v1", "v2")
    assert pending(steps, 0, what="db") == ("v1", "v2")
    assert pending(steps, 1, what="db") == ("v2",)
    assert pending(steps, 2, what="db") == ()
    with pytest.raises(SchemaVersionError, match=r"^db has schema version 3, .*\(2\)") as caught:
        pending(steps, 3, what="db")
    assert (caught.value.found, caught.value.supported) == (3, 2)


@pytest.mark.parametrize("connects", [True, False])
async def test_a_start_cancelled_while_connecting_ends_the_thread_quietly(
    tmp_path: Path, connects: bool
) -> None:
    # Ctrl-C while a backfill opened its state file: the thread's answer found start()
    # gone and died with a traceback (InvalidStateError), leaving the connection open
    entered, release = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    closed: list[bool] = []
    raised: list[BaseException] = []
    loop_hook = threading.excepthook

    def connect() -> sqlite3.Connection:
        loop.call_soon_threadsafe(entered.set)
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result(timeout=10)
        if not connects:
            raise sqlite3.OperationalError("unable to open database file")
        return sqlite3.connect(tmp_path / "x.db", check_same_thread=False)

    threading.excepthook = lambda args: raised.append(args.exc_value)  # type: ignore[assignment,return-value]
    try:
        bridge = SqliteThread(connect, name="state", on_close=lambda: closed.append(True))
        start = asyncio.create_task(bridge.start())
        await entered.wait()
        start.cancel()
        await asyncio.sleep(0)  # the cancel reaches the thread's future first
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await start
    finally:
        threading.excepthook = loop_hook
    assert raised == []
    assert closed == [True]  # the connection (or the attempt) is let go once
    assert not bridge.running


@pytest.mark.parametrize("group_commit", [False, True])
async def test_the_thread_keeps_nothing_of_a_done_job_while_it_waits_for_the_next(
    tmp_path: Path, group_commit: bool
) -> None:
    # a backfill's job holds the pages it writes: kept until the next job came, the last
    # group's megabytes stayed alive through every wait for a page
    class Page:
        """Stands for what a write holds."""

    bridge = bridge_on(tmp_path, group_commit)
    await bridge.start()
    try:
        page = Page()
        gone = weakref.ref(page)
        await bridge.run(lambda conn, held=page: conn.execute("SELECT 1"))
        del page
        for _ in range(500):  # until the thread, waiting for its next job, let it go
            gc.collect()
            if gone() is None:
                break
            await asyncio.sleep(0.01)
        assert gone() is None
    finally:
        await bridge.close()
