"""The state file carries its schema version (``PRAGMA user_version``): a state written by
the per-slice engine of 0.x is carried over in place (its progress becomes checkpoints, its
delivered ids the ``written`` key, so a resume writes nothing twice), a new one is version
2, and one written by a newer release is refused with a clear error and left untouched."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import msgspec
import pytest

from asyncwifi.engine._jsonl import JobParams, JsonlDestination
from asyncwifi.engine._jsonl_schema import _V1, DONE
from asyncwifi.errors import AsyncWifiError, SchemaVersionError

PARAMS = JobParams(kind="events", out="events.jsonl", since="2024-01-01", until="2024-01-03")


def _user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _old_state(path: Path, version: int = 1) -> None:
    """A state as 0.x wrote it: slice 0 done, slice 1 halfway (in time order)."""
    conn = sqlite3.connect(path)
    conn.executescript(_V1)
    meta = {"params": msgspec.json.encode(PARAMS).decode(), "version": "1", "offset": "123",
            "records": "3", "requests": "4", "done": "0"}  # fmt: skip
    conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    conn.executemany(
        "INSERT INTO slices (idx, start_at, end_at, done, cursor, ordered) VALUES (?,?,?,?,?,?)",
        [
            (0, "2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00+00:00", 1, None, 1),
            (1, "2024-01-02T00:00:00+00:00", "2024-01-03T00:00:00+00:00", 0,
             "2024-01-02T05:00:00.123456Z", 1),
        ],
    )  # fmt: skip
    conn.execute("INSERT INTO delivered VALUES (1, ?)", (json.dumps(["b", "c"]),))
    conn.execute("INSERT INTO boundary VALUES ('a')")
    conn.execute(f"PRAGMA user_version = {version:d}")
    conn.commit()
    conn.close()


async def _open(path: Path) -> JsonlDestination:
    store = JsonlDestination(path, path.with_name("events.jsonl"), PARAMS, parts=2)
    await store.open()
    return store


def test_a_new_state_file_carries_its_schema_version(tmp_path: Path) -> None:
    async def go() -> None:
        await (await _open(tmp_path / "job.state")).close()

    asyncio.run(go())
    assert _user_version(tmp_path / "job.state") == 2


@pytest.mark.parametrize("version", [0, 1])
def test_a_state_of_the_per_slice_engine_is_carried_over(tmp_path: Path, version: int) -> None:
    path = tmp_path / "job.state"
    _old_state(path, version)
    (tmp_path / "events.jsonl").write_bytes(b"x" * 123)

    async def go() -> None:
        store = await _open(path)
        try:
            assert store.resumed
            assert store.records == 3
            assert await store.checkpoint("events:0") == DONE
            cursor = json.loads(await store.checkpoint("events:1") or "")
            assert cursor["at"] == "2024-01-02T05:00:00.123Z"  # resumes at its cursor
            assert await store.existing("events", ["a", "b", "c", "d"]) == {"a", "b", "c"}
        finally:
            await store.close()

    asyncio.run(go())
    assert _user_version(path) == 2
    info = JsonlDestination.read_only(path)
    assert (info.offset, info.slices_done, info.slices_total) == (123, 1, 2)


def test_a_state_file_from_a_newer_release_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    _old_state(path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    before = path.read_bytes()

    with pytest.raises(SchemaVersionError, match="schema version 7") as caught:
        asyncio.run(_open(path))
    assert isinstance(caught.value, AsyncWifiError)
    assert str(path) in str(caught.value)
    with pytest.raises(SchemaVersionError):
        JsonlDestination.read_only(path)
    assert path.read_bytes() == before
    assert _user_version(path) == 7
