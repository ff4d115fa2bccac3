"""A sync pass in a process of its own, that kills itself (SIGKILL) at a protocol point.

``python -m tests.sync._killed_sync URL SHAPE [FAULT NOTE]`` runs ``Syncer.run_once`` into
URL against a seeded simulator serving SHAPE event records (the same data in every process:
``simulator(shape)`` builds it for the test too). FAULT is where it dies, counting this
process's event transactions:

- ``commit:N``: once its N-th event transaction committed;
- ``rows:N``: inside its N-th event transaction: its rows written, its checkpoint not yet,
  nothing committed.

Just before, it writes NOTE (JSON: the point and the ids of that transaction's rows), so
that the test can check the kill was where it says. The hook is this test module wrapping
the store (the product has none): on PostgreSQL through ``Destination.write``'s ``after``, which
the store awaits inside the transaction once the rows are in; on SQLite through the
connection's statement trace, at the statement that saves that transaction's checkpoint.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from asyncwifi import ScaledClock
from asyncwifi.engine import Destination, Write, open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import Wrapped

SEED, EVENTS, CONTACTS, SIZE = 11, 4_000, 60, 400
SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)


def simulator(shape: str, clock: ScaledClock | None = None) -> Simulator:
    """The simulator of every process of a test (seeded: the same ids each time)."""
    return Simulator(
        seed=SEED,
        clock=clock or ScaledClock(200.0),
        events=EVENTS,
        contacts=CONTACTS,
        event_shape=shape,  # type: ignore[arg-type]
        fractional_reset=True,
    )


class Dying(Wrapped):
    """A store that kills its process at ``point`` of its ``n``-th event transaction that
    holds rows."""

    def __init__(self, inner: Destination, point: str, n: int, note: Path) -> None:
        super().__init__(inner)
        self.point, self.n, self.note = point, n, note
        self.event_writes = 0
        #: the ids of the SQLite transaction to kill when it saves its checkpoint
        self.armed: list[str] | None = None

    def die(self, ids: list[str]) -> NoReturn:
        self.note.write_text(json.dumps({"point": self.point, "ids": ids}))
        os.kill(os.getpid(), signal.SIGKILL)
        raise SystemExit(137)  # not reached: SIGKILL to oneself is delivered at once

    def trace(self, statement: str) -> None:
        """SQLite's statement trace (on the store's thread, before each statement runs):
        die when the armed transaction, its rows in, comes to save its checkpoint."""
        if self.armed is not None and statement.startswith("INSERT INTO sync_checkpoints"):
            self.die(self.armed)

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        if write.table != "events" or not write.rows:  # a checkpoint alone holds no rows
            return await self.inner.write(write, after)
        self.event_writes += 1
        ids = [str(row[0]) for row in write.rows]
        if self.event_writes != self.n:
            return await self.inner.write(write, after)
        if self.point == "commit":
            written = await self.inner.write(write, after)
            self.die(ids)
        if self.dialect == "sqlite":
            if after is not None:
                await after  # the transaction before commits first, unarmed
            self.armed = ids
            return await self.inner.write(write, None)

        async def rows_in() -> None:  # awaited by PostgresDestination once the rows are in
            if after is not None:
                await after
            self.die(ids)

        written = await self.inner.write(write, rows_in())
        raise AssertionError(f"the store never awaited its 'after' ({written} rows)")


async def main(url: str, shape: str, fault: str | None, note: str | None) -> None:
    store = open_destination(url)
    if fault is not None and note is not None:
        point, n = fault.split(":")
        store = dying = Dying(store, point, int(n), Path(note))
        if store.dialect == "sqlite":
            connect = sqlite3.connect

            def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
                conn: sqlite3.Connection = connect(*args, **kwargs)
                conn.set_trace_callback(dying.trace)
                return conn

            sqlite3.connect = traced  # type: ignore[assignment]  # this process only
    clock = ScaledClock(200.0)
    async with simulator(shape, clock) as sim, sim.client() as api:
        syncer = Syncer(api, store, options=SyncOptions(since=SINCE, until=UNTIL, page_size=SIZE))
        try:
            await syncer.run_once()
        finally:
            await store.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(main(args[0], args[1], *(args[2:4] if len(args) >= 4 else (None, None))))
