"""Nothing lost when the operator errs (issue 40): the sync, each case as an operator runs
it (the real ``asyncwifi`` command in a child process, a real signal, a real full disk):
its documented exit status, one line, nothing lost.

A daemon killed with ``kill -9`` and restarted at once; a full disk (a pass ends with 73,
a daemon waits for space); a file size limit; a database wrong at start (a PostgreSQL role
without CREATE, a read-only folder, an export's state file, a metrics port in use); and a
``--since`` earlier than the database's events (the gap is read, once).
"""

from __future__ import annotations

import asyncio
import resource
import signal
import socket
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from asyncwifi.cli import ExitCode
from tests._fulldisk import read_only_folder, small_disk
from tests._stopping import Child
from tests.cli.conftest import (
    Result,
    asyncwifi_command,
    one_clean_line,
    run_against,
    run_command,
)
from tests.sync.conftest import destination_url, pg_database, pg_lock, require_postgres
from tests.sync.test_sync_pass import rows

DAY = ("--since", "2026-01-01", "--until", "2026-01-02")


# -- a sync killed and restarted at once -------------------------------------------------------

SYNC = ("--simulate", "--sim-events-per-day", "200")


def _sync(url: str, *extra: str) -> list[str]:
    return [*SYNC, "sync", "--to", url, *DAY, *extra]


async def _tables(url: str) -> dict[str, list[tuple[object, ...]]]:
    return {
        table: await rows(url, f"SELECT id, raw FROM {table} ORDER BY id")
        for table in ("events", "contacts", "hotspots", "segments")
    }


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
async def test_a_sync_killed_and_restarted_at_once_runs_at_once(tmp_path: Path, kind: str) -> None:
    """Before: its own dead lease held 60 s: "already synced ... by asyncwifi sync pid N",
    exit 75 (a service manager's restart lost the events of that minute and more)."""
    async with (
        destination_url(kind, tmp_path / "s.db") as url,
        destination_url(kind, tmp_path / "whole.db") as whole,
    ):
        async with Child(_sync(url, "--poll", "1d")) as daemon:
            await daemon.reach("syncing into")
            assert daemon.proc is not None
            daemon.proc.kill()  # kill -9: no release, its lease stays stamped
            await daemon.proc.wait()
        started = time.monotonic()
        again = await asyncio.to_thread(run_command, *_sync(url, "--once"))
        assert again.code == 0, again.err
        assert "Traceback" not in again.err
        said = [line for line in again.err.splitlines() if "lease" in line]
        gone = f"asyncwifi sync pid {daemon.proc.pid} on {socket.gethostname()} is gone"
        assert said == [f"asyncwifi: warning: sync: {gone}; its lease is taken over at once"]
        assert time.monotonic() - started < 45  # not after the 60 s lease
        # nothing lost: what a sync into an empty database stores
        assert (await asyncio.to_thread(run_command, *_sync(whole, "--once"))).code == 0
        stored, expected = await _tables(url), await _tables(whole)
    assert len(stored["events"]) == 200
    assert stored == expected


# -- a sync into a full disk ----------------------------------------------------------------------

#: 2,000 events a day for 2 days: more than a 400 KB disk holds
FULL = ("--simulate", "--sim-events-per-day", "2000")
TWO_DAYS = ("--since", "2026-01-01", "--until", "2026-01-03")


def _full_sync(url: str, *extra: str) -> list[str]:
    return [*FULL, "sync", "--to", url, *TWO_DAYS, *extra]


async def test_a_sync_once_into_a_full_disk_exits_73_and_resumes_once_there_is_room(
    tmp_path: Path,
) -> None:
    """Before: "the database is unreachable; retrying" for ever, even with --once (and
    exit 0 when stopped)."""
    with small_disk(tmp_path, "400k") as disk:
        db = disk.path / "s.db"
        full = await asyncio.to_thread(run_command, *_full_sync(f"sqlite:///{db}", "--once"),
                                       timeout=60)  # fmt: skip
        line = one_clean_line(_errors_only(full), ExitCode.CANT_CREATE, f"--to sqlite:///{db}")
        assert f"the disk of {db} is full" in line
        assert "free some space and run it again" in line
        disk.resize("50m")
        again = await asyncio.to_thread(run_command, *_full_sync(f"sqlite:///{db}", "--once"))
        assert again.code == 0, again.err
        whole = f"sqlite:///{tmp_path / 'whole.db'}"
        assert (await asyncio.to_thread(run_command, *_full_sync(whole, "--once"))).code == 0
        assert await _tables(f"sqlite:///{db}") == await _tables(whole)
        assert len(await rows(f"sqlite:///{db}", "SELECT id FROM events")) == 4000


async def test_a_daemon_waits_for_space_says_so_and_resumes(tmp_path: Path) -> None:
    """It waits (a line a minute), resumes once there is room (and says so), ends its pass;
    a daemon stopped while it waits exits 73, not 0 (no pass ended)."""
    with small_disk(tmp_path, "400k") as disk:
        db = disk.path / "s.db"
        async with Child(_full_sync(f"sqlite:///{db}", "--poll", "1d")) as daemon:
            await daemon.reach(f"the disk of {db} is full")
            assert "waiting for space (said once a minute)" in daemon.lines[-1]
            disk.resize("50m")
            await daemon.reach("there is space again; resuming")
            await daemon.reach("sync pass 1 done")
            # the event follower's write resumes at its own next try (at most 30 s later)
            events = f"sqlite:///{db}", "SELECT count(*) FROM events"
            for _ in range(900):
                if (await rows(*events))[0][0] == 4000:
                    break
                await asyncio.sleep(0.1)
            stopped = await daemon.stop(signal.SIGTERM)
        assert stopped.code == 0, stopped.err
        assert stopped.err.count("waiting for space") == 1
        assert (await rows(*events))[0][0] == 4000, stopped.err
    with small_disk(tmp_path, "400k", "again") as disk:
        db = disk.path / "s.db"
        async with Child(_full_sync(f"sqlite:///{db}", "--poll", "1d")) as daemon:
            await daemon.reach("waiting for space")
            stopped = await daemon.stop(signal.SIGTERM)
        assert stopped.code == ExitCode.CANT_CREATE, stopped.err
        assert "Traceback" not in stopped.err
        errors = [line for line in stopped.err.splitlines() if line.startswith("asyncwifi: error:")]
        assert len(errors) == 1
        assert f"the disk of {db} is full" in errors[0]


def test_a_sync_past_its_file_size_limit_exits_73_naming_it(tmp_path: Path) -> None:
    """``ulimit -f`` (EFBIG: SQLite says "disk I/O error"), at start and in the middle of a
    pass: waiting cannot help, the line says what limits it. No machine needs root here."""
    for limit in (60_000, 300_000):
        db = tmp_path / f"s{limit}.db"

        def small_files(limit: int = limit) -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        proc = subprocess.run(
            [*asyncwifi_command(), "-q", *_full_sync(f"sqlite:///{db}", "--once")],
            preexec_fn=small_files, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        result = _errors_only(Result(proc.returncode, proc.stdout, proc.stderr))
        line = one_clean_line(result, ExitCode.CANT_CREATE, f"--to sqlite:///{db}")
        assert f"{db} cannot grow: this process may write files of at most {limit:,} bytes" in line
        assert "ulimit -f" in line
    assert not (tmp_path / "s60000.db").exists()  # refused at start: nothing left behind


def _errors_only(result: Result) -> Result:
    """``result`` without the object plan's warnings (said at the start of every pass)."""
    kept = [line for line in result.err.splitlines() if "plan" not in line]
    return Result(result.code, result.out, "\n".join(kept) + "\n")


# -- a database wrong at start: one line, nothing created ------------------------------------


@pytest.mark.postgres
async def test_a_postgresql_role_without_create_is_one_line_naming_the_role_and_the_right() -> None:
    """Before: a 72-line asyncpg traceback, exit 1."""
    require_postgres()
    role = f"nocreate_{uuid.uuid4().hex[:8]}"
    with pg_lock(exclusive=False):
        async with pg_database() as url:
            await _admin_sql(url, f"CREATE ROLE {role} LOGIN")
            try:
                as_role = url.replace("postgresql://postgres@", f"postgresql://{role}@")
                result = await asyncio.to_thread(run_command, *_sync(as_role, "--once"))
                line = one_clean_line(result, ExitCode.NOPERM, f"--to {as_role}: role {role!r}",
                                      "CREATE on schema public",
                                      f"GRANT CREATE ON SCHEMA public TO {role}")  # fmt: skip
                assert "permission denied for schema public" in line
                tables = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                assert await rows(url, tables) == []
            finally:
                await _admin_sql(url, f"DROP OWNED BY {role}; DROP ROLE {role}")


async def _admin_sql(url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def test_a_read_only_folder_says_the_folder_is_not_writable(tmp_path: Path) -> None:
    """Before: "the database cannot be reached at start ...; check the host, the port"."""
    with read_only_folder(tmp_path) as folder:
        db = folder / "s.db"
        result = run_command(*_sync(f"sqlite:///{db}", "--once"))
        line = one_clean_line(result, ExitCode.CANT_CREATE, f"--to sqlite:///{db}",
                              f"the folder {folder} is not writable")  # fmt: skip
        assert "check the host" not in line
        assert list(folder.iterdir()) == []


def test_an_exports_state_file_as_to_is_named_and_left_untouched(tmp_path: Path) -> None:
    """Before: "no such table: sync_leases" (and a -wal and -shm beside the state)."""
    out = tmp_path / "e.jsonl"
    assert run_command(*SYNC, "events", "backfill", *DAY, "--out", str(out)).code == 0
    state = tmp_path / "e.jsonl.state"
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    result = run_command(*_sync(f"sqlite:///{state}", "--once"))
    one_clean_line(result, ExitCode.CONFIG, f"--to sqlite:///{state}",
                   "is the state file of an export", "not a sync database")  # fmt: skip
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    result = run_command(*_sync(f"sqlite:///{text}", "--once"))
    one_clean_line(result, ExitCode.CONFIG, f"{text} is not a sync database")


def test_a_metrics_port_in_use_is_named_before_the_database_is_created(tmp_path: Path) -> None:
    """Before: "error while attempting to bind on address ..." (no option named, exit 1),
    after the database was created and the lease taken."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = tmp_path / "s.db"
        result = run_command(*_sync(f"sqlite:///{db}", "--once", "--metrics-port", str(port)))
    one_clean_line(result, ExitCode.CONFIG, f"--metrics-port {port}", "Address already in use")
    assert list(tmp_path.iterdir()) == []


# -- --since earlier than the database's events -------------------------------------------------


async def test_an_earlier_since_reads_the_gap_once_and_says_so(tmp_path: Path) -> None:
    """Before: the second run's --since was ignored without a word (the first day never
    stored). One simulator serves both runs the same events."""
    from datetime import UTC, datetime

    from asyncwifi.testing import Simulator

    jan = [datetime(2026, 1, day, tzinfo=UTC) for day in (1, 2, 3)]
    db = f"sqlite:///{tmp_path / 's.db'}"
    home = tmp_path / "home"
    home.mkdir()
    sim = Simulator(events=600, contacts=5, events_start=jan[0], events_end=jan[2], seed=4)
    async with sim:
        base = (sim.base_url, sim, home)
        first = await run_against(*base, "sync", "--once", "--to", db, "--since", "2026-01-02",
                                  "--until", "2026-01-03")  # fmt: skip
        assert first.code == 0, first.err
        later_only = {r[0] for r in await rows(db, "SELECT id FROM events")}
        assert later_only == set(sim.data.event_ids(jan[1], jan[2]))
        second = await run_against(*base, "sync", "--once", "--to", db, "--since",
                                   "2026-01-01", "--until", "2026-01-03")  # fmt: skip
        assert second.code == 0, second.err
        stored = await rows(db, "SELECT id FROM events")
        assert sorted(r[0] for r in stored) == sorted(sim.data.event_ids(jan[0], jan[2]))
        # once read, the gap is the database's: the same command reads nothing again
        third = await run_against(*base, "sync", "--once", "--to", db, "--since", "2026-01-01",
                                  "--until", "2026-01-03")  # fmt: skip
        assert third.code == 0, third.err
        assert len(await rows(db, "SELECT id FROM events")) == len(stored)
        # a later --since deletes nothing, and says so
        fourth = await run_against(*base, "sync", "--once", "--to", db, "--since", "2026-01-02",
                                   "--until", "2026-01-03")  # fmt: skip
        assert "--since 2026-01-02T00:00:00.000Z is after this database's events start" in (
            fourth.err
        )
        assert len(await rows(db, "SELECT id FROM events")) == len(stored)
        # a database of an earlier release, its start unknown: said, not guessed
        with sqlite3.connect(tmp_path / "s.db") as conn:
            conn.execute("DELETE FROM sync_checkpoints WHERE name = 'events.start'")
        fifth = await run_against(*base, "sync", "--once", "--to", db, "--since", "2025-12-31",
                                  "--until", "2026-01-03")  # fmt: skip
        assert fifth.code == 0, fifth.err
        assert "--since 2025-12-31T00:00:00.000Z is not applied" in fifth.err
