"""Nothing lost when the operator errs (issue 40): one writer per output, and a state file
left with its ``-wal`` (a crash, a checkpoint cut short by a full disk) resumes.

Two jobs writing one output at once each counted the file's length as their own: the next
run cut it back to the last one's count and lost the other's lines for good (their ids
were written). The output's lock (``OUT.lock``, an OS ``flock``) now refuses the second
job, in this process or another, naming the first; it dies with its holder.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi.backfill import events_backfill
from asyncwifi.backfill._jobs import events_params
from asyncwifi.engine._jsonl import JsonlDestination
from asyncwifi.engine._jsonl_preflight import preflight
from asyncwifi.engine._lockfile import LockHeldError
from tests.backfill._disk import checkpoint_cut_short
from tests.backfill.test_durability import SINCE, UNTIL, Stop, sim, stopped
from tests.cli.conftest import run_against
from tests.client._support import NO_LIMITS, client_for


def _job(api: Any, tmp_path: Path) -> Any:
    return events_backfill(
        api, since=SINCE, until=UNTIL, out=tmp_path / "e.jsonl", state=tmp_path / "state",
        slice_size=timedelta(hours=12), page_size=50, concurrency=2,
    )  # fmt: skip


#: the state commit after which the job "crashes" (the db has grown past its main file)
CRASH_AT = 20


def _lines(out: Path) -> list[bytes]:
    return out.read_bytes().splitlines()


async def test_a_second_job_into_the_same_output_is_refused_naming_the_first(
    tmp_path: Path,
) -> None:
    async with sim() as server, client_for(server, limits=NO_LIMITS) as api:
        first = _job(api, tmp_path)
        await first.destination.open()
        lock = tmp_path / "e.jsonl.lock"
        try:
            assert lock.exists()
            second = _job(api, tmp_path)
            with pytest.raises(LockHeldError) as held:
                await second.run()
            line = str(held.value)
            assert f"output {tmp_path / 'e.jsonl'} is being written by an events backfill" in line
            assert f"pid {os.getpid()} on " in line
            assert "since " in line
        finally:
            await first.destination.close()
        assert not lock.exists()  # released: the file goes with it
        outcome = await _job(api, tmp_path).run()
    assert outcome.status == "done"
    ids = _lines(tmp_path / "e.jsonl")
    assert len(ids) == len(set(ids)) == outcome.progress.records > 0
    assert not lock.exists()


_HOLD = """
import sys
from pathlib import Path
from asyncwifi.engine._jsonl import output_lock
lock = output_lock(Path(sys.argv[1]), "events")
lock.acquire()
print("held", flush=True)
sys.stdin.read()
"""


async def test_the_lock_of_a_killed_job_dies_with_it(tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    with subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    ) as holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline() == b"held\n"
            async with sim() as server, client_for(server, limits=NO_LIMITS) as api:
                with pytest.raises(LockHeldError) as held:
                    await _job(api, tmp_path).run()
                assert f"pid {holder.pid} on " in str(held.value)
                assert not (tmp_path / "state").exists()  # refused before anything was made
                holder.send_signal(signal.SIGKILL)
                holder.wait()
                assert (tmp_path / "e.jsonl.lock").exists()  # left behind, no longer held
                outcome = await _job(api, tmp_path).run()
        finally:
            holder.kill()
    assert outcome.status == "done"
    assert not (tmp_path / "e.jsonl.lock").exists()


async def test_a_state_whose_checkpoint_was_cut_short_by_a_full_disk_resumes(
    tmp_path: Path,
) -> None:
    """The checkpoint into the main file failed half-way (the disk was full): the main file
    alone is malformed, its ``-wal`` holds every commit. The check reads it as SQLite does
    (it used to say "corrupt", exit 65), and the job resumes exactly once."""
    snapshot = tmp_path / "at-the-crash"
    files = ("e.jsonl", "state", "state-wal", "state-shm")
    async with sim() as server, client_for(server, limits=NO_LIMITS) as api:
        real_commit = JsonlDestination._commit
        calls = 0

        def crash(self: JsonlDestination, conn: sqlite3.Connection, writes: Any) -> Any:
            nonlocal calls
            calls += 1
            result = real_commit(self, conn, writes)
            if calls == CRASH_AT:  # the files as a kill -9 leaves them: the -wal not checkpointed
                snapshot.mkdir()
                for name in files:
                    shutil.copy(tmp_path / name, snapshot / name)
                raise Stop
            return result

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(JsonlDestination, "_commit", crash)
            with pytest.raises(BaseException) as caught:
                await _job(api, tmp_path).run()
        assert stopped(caught.value)
        gc.collect()  # the killed commit loop's task goes now, not in the middle of a compile
        for name in files:
            (tmp_path / name).unlink(missing_ok=True)
            shutil.move(snapshot / name, tmp_path / name)
        state = tmp_path / "state"
        assert checkpoint_cut_short(state) > 0
        alone = sqlite3.connect(f"file:{state}?mode=ro&immutable=1", uri=True)
        with pytest.raises(sqlite3.DatabaseError, match="malformed"):
            alone.execute("SELECT name FROM sqlite_master").fetchall()
        alone.close()
        before = {name: (tmp_path / name).read_bytes() for name in ("state", "state-wal")}
        params = events_params(
            out=tmp_path / "e.jsonl", since=SINCE, until=UNTIL, types=None,
            slice_size=timedelta(hours=12), gzip=False,
        )  # fmt: skip
        assert preflight(params, state_path=state, out_path=tmp_path / "e.jsonl") == "resume"
        # read, not written: the database and its -wal are as they were
        assert {name: (tmp_path / name).read_bytes() for name in before} == before
        committed = JsonlDestination.read_only(state).records
        assert committed > 0
        # the operator runs the same command again (it said "corrupt", exit 65)
        home = tmp_path / "home"
        home.mkdir()
        result = await run_against(
            server.base_url, server, home, "events", "backfill", "--since", "2024-01-01",
            "--until", "2024-01-03", "--slice", "12h", "--page-size", "50",
            "--out", str(tmp_path / "e.jsonl"), "--state", str(state),
        )  # fmt: skip
        expected = len(server.data.event_ids(SINCE, UNTIL - timedelta(milliseconds=1)))
    assert result.code == 0, result.err
    assert result.err == ""
    ids = _lines(tmp_path / "e.jsonl")
    assert len(ids) == len(set(ids)) == expected == JsonlDestination.read_only(state).records
