"""The state file carries its schema version (``PRAGMA user_version``): a file written before
it had one is migrated in place with its progress intact, and one written by a newer release
is refused with a clear error and left untouched."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from asyncwifi.backfill import JobParams, StateStore, plan_slices
from asyncwifi.backfill._state import PageCommit
from asyncwifi.errors import AsyncWifiError, SchemaVersionError

SINCE = datetime(2024, 1, 1, tzinfo=UTC)
UNTIL = SINCE + timedelta(days=2)
PARAMS = JobParams(kind="events", out="events.jsonl", since="2024-01-01", until="2024-01-03")


def _user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def _set_user_version(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"PRAGMA user_version = {version:d}")
        conn.commit()
    finally:
        conn.close()


def _state_with_progress(path: Path) -> None:
    store, created = StateStore.open(
        path, PARAMS, slices=plan_slices(SINCE, UNTIL, timedelta(days=1))
    )
    assert created
    store.commit_pages(
        offset=123,
        pages=[PageCommit(index=0, ids=["a", "b"], cursor=None, ordered=True, requests=1)],
    )
    store.close()


def test_a_new_state_file_carries_its_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    _state_with_progress(path)
    assert _user_version(path) == 1


def test_a_state_file_from_before_versions_is_migrated_with_its_progress(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    _state_with_progress(path)
    _set_user_version(path, 0)  # as every state file was written until now

    store, created = StateStore.open(path, PARAMS)
    try:
        assert not created
        assert store.offset == 123
        assert store.delivered_ids(0) == {"a", "b"}
    finally:
        store.close()
    assert _user_version(path) == 1


def test_a_state_file_from_a_newer_release_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    _state_with_progress(path)
    _set_user_version(path, 7)
    before = path.read_bytes()

    with pytest.raises(SchemaVersionError, match="schema version 7") as caught:
        StateStore.open(path, PARAMS)
    assert isinstance(caught.value, AsyncWifiError)
    assert str(path) in str(caught.value)
    with pytest.raises(SchemaVersionError):
        StateStore.read_only(path)
    assert path.read_bytes() == before
    assert _user_version(path) == 7
