"""Fixtures of the sync tests: a database per test (SQLite file or a fresh PostgreSQL
database), a simulator on a fast clock with a client, and helpers to read what was stored
(among them :class:`Recording`, a store that lists every event id it was asked to write)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest

from asyncwifi import Client, ScaledClock
from asyncwifi.engine import Destination, Write
from asyncwifi.testing import Simulator

PG_HOST, PG_PORT = "127.0.0.1", 5432
PG_ADMIN = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/postgres"
#: PostgreSQL tests take it shared; the restart test takes it exclusively
PG_LOCK = Path("/tmp/asyncwifi-tests-postgres.lock")


def pg_reachable(tries: int = 5) -> bool:
    """Whether PostgreSQL accepts a connection (a loaded machine gets a few tries)."""
    for attempt in range(tries):
        try:
            with socket.create_connection((PG_HOST, PG_PORT), timeout=2.0):
                return True
        except OSError:
            if attempt + 1 < tries:
                time.sleep(0.2)
    return False


def postgres_required() -> bool:
    """Whether this run must test PostgreSQL (``ASYNCWIFI_REQUIRE_POSTGRES=1``, as in CI)."""
    return os.environ.get("ASYNCWIFI_REQUIRE_POSTGRES") == "1"


def skip_unless_required(reason: str) -> NoReturn:
    """Skip a PostgreSQL test that cannot run here; fail it when PostgreSQL is required."""
    if postgres_required():
        pytest.fail(reason + " (ASYNCWIFI_REQUIRE_POSTGRES=1)")
    pytest.skip(reason)


def require_postgres() -> None:
    """Skip (fail under ASYNCWIFI_REQUIRE_POSTGRES=1) when PostgreSQL is unreachable.

    Asked under the shared lock: the restart test stops the server while it holds the lock
    exclusively, and a test asking then would find it down (seen in CI)."""
    with pg_lock(exclusive=False):
        reachable = pg_reachable()
    if not reachable:
        skip_unless_required(f"PostgreSQL is not reachable on {PG_HOST}:{PG_PORT}")


@contextlib.contextmanager
def pg_lock(exclusive: bool) -> Iterator[None]:
    with PG_LOCK.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def pg_database() -> AsyncIterator[str]:
    """A fresh database, dropped afterwards; yields its URL."""
    name = f"asyncwifi_test_{uuid.uuid4().hex[:12]}"
    await _admin(f"CREATE DATABASE {name}")
    try:
        yield f"postgresql://postgres@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        for _ in range(20):
            try:
                await _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                break
            except Exception:  # the server may be restarting (the restart test)
                import asyncio

                await asyncio.sleep(0.5)


@contextlib.asynccontextmanager
async def destination_url(kind: str, path: Path) -> AsyncIterator[str]:
    """A destination URL: a SQLite file at ``path``, or a PostgreSQL database of its own."""
    if kind == "sqlite":
        yield f"sqlite:///{path}"
        return
    require_postgres()
    with pg_lock(exclusive=False):
        async with pg_database() as url:
            yield url


@pytest.fixture(params=["sqlite", "postgresql"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A destination URL: a SQLite file, or a PostgreSQL database of this test's own."""
    async with destination_url(request.param, tmp_path / "sync.db") as url:
        yield url


SPEED = 200.0


@contextlib.asynccontextmanager
async def sim_client(
    *, clock: ScaledClock | None = None, **options: Any
) -> AsyncIterator[tuple[Simulator, Client]]:
    """A started simulator and a client on one fast clock (``clock``: the test's own; the
    gateway's limits off: these tests are about what is stored, the limiter has its own)."""
    clock = clock if clock is not None else ScaledClock(SPEED)
    options.setdefault("rate_limit_mode", "off")
    async with (
        Simulator(clock=clock, **options) as sim,
        Client(
            sim.client_key,
            sim.client_secret,
            base_url=sim.base_url,
            organization=sim.organization,
            allow_http=True,
            clock=clock,
        ) as api,
    ):
        yield sim, api


def shapes_supported() -> bool:
    """Whether this branch's simulator serves several event shapes (``event_shape``)."""
    import inspect

    return "event_shape" in inspect.signature(Simulator).parameters


def shape_options(shape: str) -> dict[str, Any]:
    """Simulator options for an event shape; skips a shape the simulator cannot serve."""
    if shapes_supported():
        return {"event_shape": shape}
    if shape != "dated":
        pytest.skip(f"this simulator serves only dated events, not {shape!r} (no event_shape)")
    return {}


class Crash(Exception):
    """A failure a test injects (not one the sync knows how to wait out)."""


class Wrapped(Destination):
    """A store around another: every operation goes to ``inner`` unless overridden."""

    def __init__(self, inner: Destination) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.concurrency = inner.concurrency

    @property
    def organization(self) -> str:
        return self.inner.organization

    @organization.setter
    def organization(self, value: str) -> None:
        self.inner.organization = value  # a Syncer's client's (``Syncer``)

    @property
    def lease(self) -> int | None:
        return self.inner.lease

    @lease.setter
    def lease(self, value: int | None) -> None:
        self.inner.lease = value

    async def take_lease(self, holder: str) -> int:
        return await self.inner.take_lease(holder)

    async def open(self) -> None:
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    async def checkpoint(self, name: str) -> str | None:
        return await self.inner.checkpoint(name)

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        return await self.inner.write(write, after)

    async def ids(self, table: str, *, deleted: bool = False) -> set[str]:
        return await self.inner.ids(table, deleted=deleted)

    async def existing(self, table: str, ids: Sequence[str]) -> set[str]:
        return await self.inner.existing(table, ids)

    async def count(self, table: str) -> int:
        return await self.inner.count(table)

    async def schema_version(self) -> int:
        return await self.inner.schema_version()


class Recording(Wrapped):
    """A store that also lists every event id it was asked to write: a second delivery of
    an event shows here, where the table's primary key would make it a silent no-op.

    ``crash_at(n)``: the n-th event write of rows raises :class:`Crash` before anything of it is
    written (the pass ends there, as a process killed between two transactions would).
    """

    def __init__(self, inner: Destination, events: list[str] | None = None) -> None:
        super().__init__(inner)
        #: event ids in the order they were written (shared with a later store: a restart)
        self.events: list[str] = [] if events is None else events
        #: event writes of rows asked for (committed or not)
        self.event_writes = 0
        self._crash_at = 0

    def crash_at(self, n: int) -> None:
        self._crash_at = n

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        if write.table == "events" and write.rows:  # a checkpoint alone is not counted
            self.event_writes += 1
            if self.event_writes == self._crash_at:
                raise Crash(f"the sync dies at its event write {self.event_writes} (test)")
        # listed before the commit (a reader may see the rows before this coroutine
        # resumes), taken back if the write fails (its retry lists them again)
        listed = [str(row[0]) for row in write.rows] if write.table == "events" else []
        self.events += listed
        try:
            return await self.inner.write(write, after)
        except BaseException:
            for ident in listed:
                self.events.remove(ident)
            raise


def free_port() -> int:
    """A TCP port on loopback nobody listens on (for a metrics endpoint)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str) -> tuple[int, str]:
    """Status and body of a GET (0 and "" while nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


@pytest.fixture
def zone_new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's local zone is not UTC (a server in New York)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


class GearedClock(ScaledClock):
    """A scaled clock whose speed a test changes on the way (``shift``), going on from the
    time it shows: slow through a phase a loaded machine must not let run away (a first
    pass, two processes sharing a day), fast once it cannot matter."""

    __slots__ = ()

    def shift(self, speed: float) -> None:
        self.start, self._m0, self.speed = self.now(), time.monotonic(), speed

    def jump(self, seconds: float) -> None:
        """Move on ``seconds`` at once (a consumer away that long, in no real time; a
        sleep in progress still lasts its real time)."""
        self.start += seconds


def ignore_deleted_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the simulator a server that ignores the hotspots' ``deleted`` filter (it answers
    the live list): legal by the reference, and nothing may be deleted on its word."""
    from aiohttp import web

    from asyncwifi.testing._api_hotspots import HotspotsApi

    original = HotspotsApi.hotspots_list

    async def ignoring(self: Any, request: web.Request) -> web.Response:
        query = {k: v for k, v in request.query.items() if k != "deleted"}
        plain = request.clone(rel_url=request.rel_url.with_query(query))
        return await original(self, plain)

    monkeypatch.setattr(HotspotsApi, "hotspots_list", ignoring)
