"""``asyncwifi sync`` stopped by SIGTERM or SIGINT in each of its waits: the database down
(mid-write, and from the start), the day's quota spent, the budget's part spent, a request
in backoff, the daemon's poll. Each time the real command, in a child process, says it is
in the wait; the signal must end it within seconds with exit 0, and the database must hold
whole committed batches only: the stored events are exactly those its checkpoint covers."""

from __future__ import annotations

import asyncio
import re
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi._cursor import TimeCursor
from asyncwifi.cli._app import SimOptions
from asyncwifi.cli._simulate import build_simulator
from asyncwifi.engine import open_destination
from asyncwifi.testing import Faults, Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END as EVENTS_END
from asyncwifi.testing._data import DEFAULT_EVENTS_START as EVENTS_START
from tests._proxy import CuttableProxy
from tests._stopping import STOP_WITHIN, Child, Stopped, pointed_at
from tests.sync.conftest import (
    PG_PORT,
    free_port,
    http_get,
    pg_database,
    pg_lock,
    require_postgres,
)

#: the simulated clock starts at noon: the day's quota is back only 12 h (216 s) later
START = datetime(2026, 1, 10, 12, tzinfo=UTC)
SINCE, UNTIL = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 4, tzinfo=UTC)
PER_DAY = 5_000
SIM = SimOptions(enabled=True, speed=200, seed=3, events_per_day=PER_DAY, start=START.timestamp())


def _simulate(options: SimOptions = SIM) -> list[str]:
    return [
        "--simulate",
        "--sim-speed", str(options.speed),
        "--sim-seed", str(options.seed),
        "--sim-events-per-day", str(options.events_per_day),
        "--sim-day-limit", str(options.day_limit),
        "--sim-start", str(options.start),
    ]  # fmt: skip


def _sync(url: str, *extra: str, until: datetime = UNTIL) -> list[str]:
    return ["sync", "--to", url, "--since", SINCE.isoformat(), "--until", until.isoformat(), *extra]


def _stopped_cleanly(stopped: Stopped) -> None:
    assert stopped.code == 0, stopped.err
    assert stopped.seconds < STOP_WITHIN, stopped
    assert "stopping after the transaction in progress" in stopped.err
    assert "sync stopped" in stopped.err
    assert "Traceback" not in stopped.err


async def _whole_batches(
    url: str, options: SimOptions = SIM, since: datetime = SINCE, until: datetime = UNTIL
) -> int:
    """The stored events are exactly those the stored checkpoint covers (none of a batch
    half-written, none beyond the checkpoint): every simulated event before its time, and
    of those at its time the ids it names. Returns how many."""
    sim = build_simulator(options, since=since, until=until, clock=ScaledClock(1.0))
    store = open_destination(url, organization=sim.organization)  # the command's
    await store.open()
    try:
        text = await store.checkpoint("events")
        held = await store.ids("events")
        assert await store.count("events") == len(held)
    finally:
        await store.close()
    if text is None:
        assert held == set()
        return 0
    cursor = TimeCursor.start("events", text, since)
    before = cursor.at - timedelta(milliseconds=1)
    covered = set(sim.data.event_ids(since, before)) | cursor.skip
    assert held == covered
    return len(held)


@pytest.mark.postgres
async def test_sigterm_while_postgresql_is_lost_mid_write(tmp_path: Path) -> None:
    """The connection is cut in the middle of a batch's COPY: the sync retries with
    backoff; SIGTERM ends it at once (it used to retry until SIGKILL)."""
    require_postgres()
    with pg_lock(exclusive=False):
        async with pg_database() as url:
            # a batch is ~5 MB: the cut lands in the second or third
            proxy = CuttableProxy(PG_PORT, cut_after=7_000_000)
            await proxy.start()
            try:
                through = url.replace(f":{PG_PORT}/", f":{proxy.port}/")
                async with Child([*_simulate(), *_sync(through, "--once")]) as child:
                    await child.reach("the database is unreachable")
                    stopped = await child.stop(signal.SIGTERM)
            finally:
                await proxy.close()
            _stopped_cleanly(stopped)
            stored = await _whole_batches(url)
            assert stored < PER_DAY * 3  # it did stop before the end


async def test_sigterm_while_the_days_quota_is_spent(tmp_path: Path) -> None:
    """Four requests a day, and a first day of events that takes five: the quota runs out
    inside it, and the sync sleeps until the reset (216 s away); SIGTERM."""
    url = f"sqlite:///{tmp_path / 'sync.db'}"
    options = SimOptions(**{**vars(SIM), "day_limit": 4, "events_per_day": 40_000})
    until = SINCE + timedelta(days=1)
    async with Child([*_simulate(options), *_sync(url, "--once", until=until)]) as child:
        await child.reach("the day's quota is spent; sleeping until")
        stopped = await child.stop(signal.SIGTERM)
    _stopped_cleanly(stopped)
    assert await _whole_batches(url, options, SINCE, until) > 0


async def test_sigterm_while_the_budget_waits_for_the_next_day(tmp_path: Path) -> None:
    """Three requests a day: the events' part of the budget is spent first, and the feed
    waits for the UTC day's end inside its fetch; SIGTERM cancels that fetch."""
    url = f"sqlite:///{tmp_path / 'sync.db'}"
    options = SimOptions(**{**vars(SIM), "day_limit": 3})
    async with Child([*_simulate(options), *_sync(url, "--once")]) as child:
        await child.reach("part of the budget")
        stopped = await child.stop(signal.SIGTERM)
    _stopped_cleanly(stopped)
    assert await _whole_batches(url) > 0


async def test_sigterm_while_a_request_is_in_backoff(tmp_path: Path) -> None:
    """Every events request fails with a 5xx: the client retries with backoff; SIGTERM
    cancels the request (it used to retry to the end, then fail with exit 1)."""
    db = tmp_path / "sync.db"
    faults = Faults(error_rate=1.0, paths=("*/events",))
    async with Simulator(seed=3, events=1_000, contacts=50, faults=faults) as sim:
        since, until = (
            datetime.fromtimestamp(t, UTC).isoformat() for t in (EVENTS_START, EVENTS_END)
        )
        args = ["sync", "--to", f"sqlite:///{db}", "--since", since, "--until", until, "--once"]
        async with Child(args, env=pointed_at(sim, tmp_path)) as child:
            await child.reach("retry 1 in")
            stopped = await child.stop(signal.SIGTERM)
    _stopped_cleanly(stopped)
    assert "retry 3 in" not in stopped.err
    url = f"sqlite:///{db}"
    store = open_destination(url)
    await store.open()
    try:
        assert await store.count("events") == 0
        assert await store.checkpoint("events") is None
    finally:
        await store.close()


async def test_sigterm_while_the_daemon_waits_for_its_next_poll(tmp_path: Path) -> None:
    """Caught up, the daemon sleeps a day (432 s here) before its next poll; SIGTERM."""
    port = free_port()
    url = f"sqlite:///{tmp_path / 'sync.db'}"
    since = START - timedelta(days=2)
    args = ["sync", "--to", url, "--since", since.isoformat(), "--poll", "1d",
            "--refresh-every", "1d", "--metrics-port", str(port)]  # fmt: skip
    total = 2 * PER_DAY
    # the events of the last 60 s (the follower's settle window) before the pass are left
    # for the next poll, and how many that is depends on how soon the pass ran: at
    # PER_DAY a day that is ~3.5 events, so at most 10 may wait for the next poll
    settled = total - 10
    async with Child([*_simulate(), *args]) as child:
        await child.reach("SIGTERM to stop")
        deadline = time.monotonic() + 60
        stored = 0
        while time.monotonic() < deadline:
            # polled, not guessed: a pass done, every settled event stored (then it waits)
            health, _ = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/healthz")
            _, metrics = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/metrics")
            found = re.search(r'rows_total\{table="events"\} (\d+)', metrics)
            stored = int(found.group(1)) if found else 0
            if health == 200 and stored >= settled:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail(f"the daemon did not catch up: {health}\n{metrics}")
        stopped = await child.stop(signal.SIGTERM)
    _stopped_cleanly(stopped)
    assert f"events {stored:,}" in stopped.err  # nothing more was written after the wait
