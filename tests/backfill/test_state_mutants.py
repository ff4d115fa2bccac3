"""The state file on its own: what it reports after commits, a group commit that fails
leaving nothing behind, ids seen at slice boundaries in any number, read-only reads that
change nothing, and the words used when a state belongs to another job."""

from __future__ import annotations

import re
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from asyncwifi.backfill import JobParams, StateInfo, StateMismatchError, StateStore, plan_slices
from asyncwifi.backfill._state import PageCommit
from asyncwifi.errors import SchemaVersionError

SINCE = datetime(2024, 1, 1, tzinfo=UTC)
UNTIL = SINCE + timedelta(days=3)
PARAMS = JobParams(kind="events", out="events.jsonl", since="2024-01-01", until="2024-01-04")


def _open(path: Path, params: JobParams = PARAMS) -> StateStore:
    store, _ = StateStore.open(path, params, slices=plan_slices(SINCE, UNTIL, timedelta(days=1)))
    return store


def _page(index: int, ids: list[str], **kw: object) -> PageCommit:
    fields: dict[str, object] = {"cursor": None, "ordered": True, "requests": 1, **kw}
    return PageCommit(index=index, ids=ids, **fields)  # type: ignore[arg-type]


def test_committed_pages_show_in_the_slices_and_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    store = _open(path)
    try:
        assert store.path == path
        store.commit_pages(
            offset=100,
            pages=[
                _page(0, ["a", "b", "c"], cursor="2024-01-01T05", requests=2),
                _page(0, ["d"], cursor="2024-01-01T04", ordered=False),
                _page(2, ["x", "y"], cursor="2024-01-03T01"),
            ],
        )
        store.finish_slice(2)
        slices = store.slices()
        assert [(s.index, s.done, s.records, s.pages, s.cursor, s.ordered) for s in slices] == [
            (0, False, 4, 2, "2024-01-01T04", False),
            (1, False, 0, 0, None, True),
            (2, True, 2, 1, "2024-01-03T01", True),
        ]
        assert (slices[1].start, slices[1].end) == (
            SINCE + timedelta(days=1),
            SINCE + timedelta(days=2),
        )
        assert (store.offset, store.records, store.requests, store.done) == (100, 6, 4, False)
        assert store.delivered_ids(0) == {"a", "b", "c", "d"}
        assert store.delivered_ids(2) == set()  # a finished slice forgets its ids
    finally:
        store.close()
    assert StateStore.read_only(path) == StateInfo(
        params=PARAMS,
        version=1,
        offset=100,
        records=6,
        done=False,
        slices_total=3,
        slices_done=1,
    )


def test_requests_are_counted_only_as_reported(tmp_path: Path) -> None:
    store = _open(tmp_path / "job.state")
    try:
        store.finish_slice(0)
        assert store.requests == 0
        store.finish_slice(1, requests=3)
        store.add_requests(0)
        assert store.requests == 3
        store.add_requests(2)
        assert store.requests == 5
        store.mark_done()
        assert store.done
    finally:
        store.close()


def test_a_group_commit_that_fails_leaves_no_part_of_it(tmp_path: Path) -> None:
    store = _open(tmp_path / "job.state")
    try:
        store.commit_pages(offset=10, pages=[_page(0, ["a"])])
        bad = _page(1, ["c"], cursor=object())  # cannot be stored: fails mid-transaction
        with pytest.raises(sqlite3.Error):
            store.commit_pages(offset=30, pages=[_page(0, ["b"]), bad])
        assert (store.offset, store.records, store.requests) == (10, 1, 1)
        assert store.delivered_ids(0) == {"a"}
        assert store.delivered_ids(1) == set()
        store.commit_pages(offset=20, pages=[_page(0, ["b"])])  # the store is still usable
        assert (store.offset, store.records) == (20, 2)
    finally:
        store.close()


def test_boundary_ids_are_found_in_any_number(tmp_path: Path) -> None:
    store = _open(tmp_path / "job.state")
    try:
        written = [f"id{i:05d}" for i in range(1_201)]
        store.commit_pages(offset=1, pages=[_page(0, ["r"], boundary_ids=written)])
        store.commit_pages(offset=2, pages=[_page(1, ["s"], boundary_ids=written[:3])])
        asked = [*written, "never-written", "other"]
        assert store.seen_at_boundary(asked) == set(written)
        assert store.seen_at_boundary(iter(["id00000", "id01200", "nope"])) == {
            "id00000",
            "id01200",
        }
        assert store.seen_at_boundary([]) == set()
    finally:
        store.close()


def test_exists_only_for_an_initialised_state(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    assert not StateStore.exists(path)
    path.write_bytes(b"")
    assert not StateStore.exists(path)
    path.write_bytes(b"not a database at all, but long enough to look like one" * 20)
    assert not StateStore.exists(path)
    path.unlink()
    sqlite3.connect(path).close()
    assert not StateStore.exists(path)  # a database, but no state in it
    path.unlink()
    assert not StateStore.exists(tmp_path)  # a directory
    store = _open(path)
    try:
        assert StateStore.exists(path)  # while the job runs (a -wal file next to it)
    finally:
        store.close()
    assert StateStore.exists(path)


def test_read_only_reads_a_killed_jobs_state_and_changes_nothing(tmp_path: Path) -> None:
    store = _open(tmp_path / "job.state")
    try:
        store.commit_pages(offset=42, pages=[_page(0, ["a", "b"])])
        # the files as a job killed now leaves them: the commit is in the -wal file only
        killed = tmp_path / "killed"
        killed.mkdir()
        for suffix in ("", "-wal", "-shm"):
            shutil.copy(tmp_path / f"job.state{suffix}", killed / f"job.state{suffix}")
    finally:
        store.close()
    path = killed / "job.state"
    before = {p.name: p.read_bytes() for p in killed.iterdir()}
    assert StateStore.exists(path)
    info = StateStore.read_only(path)
    assert (info.offset, info.records, info.slices_total) == (42, 2, 3)
    after = {p.name: p.read_bytes() for p in killed.iterdir() if p.name != "job.state-shm"}
    assert after == {k: v for k, v in before.items() if k != "job.state-shm"}


def test_read_only_of_a_missing_state_fails_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(sqlite3.OperationalError):
        StateStore.read_only(tmp_path / "typo.state")
    assert list(tmp_path.iterdir()) == []


def test_a_state_from_a_newer_release_names_the_file_and_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    _open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError) as caught:
        StateStore.read_only(path)
    assert str(caught.value).startswith(
        f"state file {path} has schema version 9, newer than this asyncwifi reads (1)"
    )
    assert (caught.value.found, caught.value.supported) == (9, 1)


def test_a_state_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    _open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'version'")
    conn.commit()
    conn.close()
    message = f"state file {path} has format 2; this asyncwifi writes 1"
    with pytest.raises(StateMismatchError, match=f"^{re.escape(message)}$"):
        StateStore.open(path, PARAMS)


STORED = JobParams(kind="events", out="e.jsonl", since="2024-01-01", types=None, slice_seconds=3600)
WANTED = JobParams(
    kind="events",
    out="e.jsonl",
    gzip=True,
    since="2024-01-02",
    until="2024-02-01",
    types=("visit", "login"),
    slice_seconds=7200,
)
DIFF = (
    "gzip: the state has no, this run asks yes; "
    "since: the state has 2024-01-01, this run asks 2024-01-02; "
    "until: the state has none, this run asks 2024-02-01; "
    "types: the state has all, this run asks visit,login; "
    "slice_seconds: the state has 3600, this run asks 7200"
)


def test_another_jobs_state_is_described_in_the_users_words(tmp_path: Path) -> None:
    path = tmp_path / "job.state"
    _open(path, STORED).close()
    message = (
        f"state file {path} belongs to another job ({DIFF}); "
        "use the same options, or another --state"
    )
    with pytest.raises(StateMismatchError, match=f"^{re.escape(message)}$"):
        StateStore.open(path, WANTED)
    assert StateStore.read_only(path).diff(WANTED) == DIFF
    reverse = StateStore.read_only(path).diff(STORED)
    assert reverse == ""
    _open(tmp_path / "other.state", WANTED).close()
    assert (
        StateStore.read_only(tmp_path / "other.state")
        .diff(STORED)
        .startswith(
            "gzip: the state has yes, this run asks no; "
            "since: the state has 2024-01-02, this run asks 2024-01-01; "
            "until: the state has 2024-02-01, this run asks none; "
            "types: the state has visit,login, this run asks all"
        )
    )


def test_job_params_describe_themselves_without_the_unset_ones() -> None:
    assert WANTED.describe() == (
        "kind=events, out=e.jsonl, gzip=yes, since=2024-01-02, until=2024-02-01, "
        "types=visit,login, slice_seconds=7200"
    )
    assert (
        STORED.describe()
        == "kind=events, out=e.jsonl, gzip=no, since=2024-01-01, slice_seconds=3600"
    )
