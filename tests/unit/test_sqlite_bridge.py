"""The shared asyncio-to-SQLite bridge: a job that fails in any way, even with a
``BaseException`` (a crash), fails its own caller and no other, and the thread serves on."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from asyncwifi._sqlite import SqliteThread


class Crash(BaseException):
    """Not an Exception: what a handler of ``Exception`` would never catch."""


def _crash(conn: sqlite3.Connection) -> None:
    raise Crash


@pytest.mark.parametrize("group_commit", [False, True])
async def test_a_crashing_job_fails_its_caller_and_the_thread_serves_on(
    tmp_path: Path, group_commit: bool
) -> None:
    bridge = SqliteThread(
        lambda: sqlite3.connect(tmp_path / "x.db", isolation_level=None, check_same_thread=False),
        name="test-bridge",
        group_commit=group_commit,
    )
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
