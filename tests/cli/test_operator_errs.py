"""Nothing lost when the operator errs (issue 40), each case as an operator runs it: the
real ``asyncwifi`` command in a child process, a real signal, a real full disk. Each ends
with its documented exit status and one line, and loses nothing.

Exports: two jobs into one ``--out`` (the second is refused naming the first; the first
killed with ``kill -9``, the next run starts at once), and a disk that fills up (exit 73
naming the file; once there is room, the same command resumes).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from asyncwifi.cli import ExitCode
from asyncwifi.engine._jsonl import JsonlDestination
from tests._fulldisk import small_disk
from tests._stopping import Child
from tests.cli.conftest import one_clean_line, run_command

DAY = ("--since", "2026-01-01", "--until", "2026-01-02")


async def _until(check: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    """Poll ``check`` (the files a child writes) until it holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"never: {what}")
        await asyncio.sleep(0.05)


def _committed(state: Path) -> int:
    try:
        return JsonlDestination.read_only(state).records if JsonlDestination.exists(state) else 0
    except Exception:
        return 0  # being created


def _event_ids(out: Path) -> list[str]:
    return [json.loads(line)["event"]["id"] for line in out.read_text().splitlines()]


# -- one writer per output --------------------------------------------------------------------


async def test_a_second_export_into_one_out_is_refused_and_a_killed_ones_lock_dies_with_it(
    tmp_path: Path,
) -> None:
    """Before: the second backfill ran too; both counted the file's length as their own and
    the next run cut the file back to one of them (1,080 of 10,000 events lost, silently)."""
    out, state, lock = tmp_path / "e.jsonl", tmp_path / "e.jsonl.state", tmp_path / "e.jsonl.lock"
    sim = ("--simulate", "--sim-speed", "10", "--sim-events-per-day", "2000")
    backfill = (*sim, "events", "backfill", *DAY, "--out", str(out))
    async with Child([*backfill, "--page-size", "10"]) as first:  # 200 pages: a while
        assert first.proc is not None
        await _until(lambda: _committed(state) > 0, "the first backfill committed a page")
        second = await asyncio.to_thread(run_command, *backfill)
        holder = f"output {out} is being written by an events backfill (pid {first.proc.pid} on "
        line = one_clean_line(second, ExitCode.TEMPFAIL, holder, ", since ")
        export = (*sim, "contacts", "export", "--out", str(out))
        contacts = await asyncio.to_thread(run_command, *export)
        assert one_clean_line(contacts, ExitCode.TEMPFAIL) == line
        assert first.proc.returncode is None  # the first goes on
        first.proc.kill()  # kill -9: no handler runs, the lock file stays
        await first.proc.wait()
    assert lock.exists()
    started = time.monotonic()
    again = await asyncio.to_thread(run_command, *backfill)
    assert again.code == 0, again.err
    assert time.monotonic() - started < 60  # at once: nothing to expire
    ids = _event_ids(out)
    assert len(ids) == len(set(ids)) == 2000 == JsonlDestination.read_only(state).records
    assert not lock.exists()


# -- a full disk --------------------------------------------------------------------------------


def test_a_backfill_stopped_by_a_full_disk_resumes_once_there_is_room(tmp_path: Path) -> None:
    """40,000 events, a page per commit, on a 3,000 KB disk: the disk fills in the middle
    of the state's checkpoint, whose last commits stay in its ``-wal``. Before: exit 73, then
    "state file ... is corrupt (database disk image is malformed)", exit 65 (read
    ``immutable``, the ``-wal`` ignored)."""
    with small_disk(tmp_path, "3000k") as disk:
        out = disk.path / "e.jsonl"
        args = ("--simulate", "events", "backfill", "--since", "2026-01-01", "--until",
                "2026-01-05", "--out", str(out), "--page-size", "100",
                "--concurrency", "1")  # fmt: skip
        full = run_command(*args)
        line = one_clean_line(full, ExitCode.CANT_CREATE, f"cannot write {out}")
        assert "disk is full" in line or "No space left on device" in line
        committed = JsonlDestination.read_only(disk.path / "e.jsonl.state").records
        assert committed > 0
        disk.resize("100m")
        again = run_command(*args)
        assert again.code == 0, again.err
        ids = _event_ids(out)
        assert len(ids) == len(set(ids)) == 40_000
        assert sorted(p.name for p in disk.path.iterdir()) == ["e.jsonl", "e.jsonl.state"]
