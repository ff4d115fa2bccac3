"""A durable receiver killed with SIGKILL mid-stream loses nothing it acknowledged.

The receiver runs in its own process (``receiver_process.py``); a sender in this process
keeps 16 requests in flight, and the receiver is killed while they are. After a restart on
the same spool, every acknowledged event is handled, none twice, and the events the dead
process had acknowledged but not handled are handled by the new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tests.webhooks.helpers import SECRET, auth, body_of

SCRIPT = Path(__file__).with_name("receiver_process.py")

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")


class Proc:
    def __init__(self, tmp: Path, name: str, *, delay: float) -> None:
        self.port_file = tmp / f"{name}.port"
        env = {**os.environ, "ASYNCWIFI_WEBHOOK_SECRET": f"other-secret,{SECRET}"}
        self.popen = subprocess.Popen(
            [
                sys.executable,
                str(SCRIPT),
                *("--spool", str(tmp / "spool.sqlite3")),
                *("--out", str(tmp / "handled.sqlite3")),
                *("--port-file", str(self.port_file)),
                *("--delay", str(delay)),
            ],
            env=env,
        )

    def port(self) -> int:
        deadline = time.monotonic() + 20
        while not self.port_file.exists():
            assert self.popen.poll() is None, "the receiver process died at start"
            assert time.monotonic() < deadline, "the receiver process did not start"
            time.sleep(0.02)
        return int(self.port_file.read_text())

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(10)


def rows(tmp: Path, sql: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(tmp / "handled.sqlite3")) as conn:
        return conn.execute(sql).fetchall()


async def send_until_killed(port: int, proc: Proc, *, kill_after: int) -> set[str]:
    """16 concurrent senders; SIGKILL the receiver once ``kill_after`` were acknowledged."""
    acked: set[str] = set()
    counter = itertools.count()
    killed = False

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal killed
        while not killed:
            nonce = f"crash-{next(counter)}"
            try:
                async with session.post(
                    f"http://127.0.0.1:{port}/webhooks", data=body_of(nonce=nonce), headers=auth()
                ) as response:
                    if 200 <= response.status < 300:
                        acked.add(nonce)
            except (TimeoutError, aiohttp.ClientError):
                return  # the receiver is gone: this request was not acknowledged
            if len(acked) >= kill_after and not killed:
                killed = True
                os.kill(proc.popen.pid, signal.SIGKILL)  # others are still in flight

    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(worker(session) for _ in range(16)))
    return acked


async def test_sigkill_mid_stream_loses_nothing_acknowledged(tmp_path: Path) -> None:
    # A slow handler (20 ms per event) so that a backlog is spooled but not handled yet.
    first = Proc(tmp_path, "first", delay=0.02)
    try:
        acked = await send_until_killed(first.port(), first, kill_after=150)
    finally:
        first.kill()
    assert first.popen.returncode == -signal.SIGKILL
    handled_before = {n for (n,) in rows(tmp_path, "SELECT nonce FROM handled")}
    assert len(handled_before) < len(acked), "no backlog at the kill: the test proves nothing"

    second = Proc(tmp_path, "second", delay=0.0)
    try:
        port = second.port()
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{port}/webhooks"
            # Redeliveries of acknowledged events are duplicates, even in a new process.
            for nonce in sorted(acked)[:10]:
                async with session.post(url, data=body_of(nonce=nonce), headers=auth()) as r:
                    assert r.status == 200
                    assert await r.json() == {"status": "duplicate"}
            for i in range(20):
                nonce = f"after-{i}"
                async with session.post(url, data=body_of(nonce=nonce), headers=auth()) as r:
                    assert r.status == 202
                    acked.add(nonce)
        deadline = time.monotonic() + 15
        while True:
            handled = {n for (n,) in rows(tmp_path, "SELECT nonce FROM handled")}
            if acked <= handled or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        second.popen.send_signal(signal.SIGTERM)
        assert second.popen.wait(15) == 0  # graceful stop
    finally:
        second.kill()

    assert acked - handled == set(), "acknowledged events were lost"
    counts = rows(
        tmp_path, "SELECT nonce, COUNT(*) FROM handled GROUP BY nonce HAVING COUNT(*) > 1"
    )
    assert counts == [], "events handled twice"
    # The spool itself never delivers an event twice as a first attempt ...
    firsts = rows(
        tmp_path,
        "SELECT nonce FROM deliveries WHERE attempt = 1 GROUP BY nonce HAVING COUNT(*) > 1",
    )
    assert firsts == []
    # ... and the new process handled what the killed one had acknowledged but not handled.
    recovered = {
        n for (n,) in rows(tmp_path, f"SELECT nonce FROM handled WHERE pid = {second.popen.pid}")
    }
    assert {n for n in acked if n.startswith("crash-")} - handled_before <= recovered
