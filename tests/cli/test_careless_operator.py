"""An operator's first hour (issue 33): each careless input of the sync, the extras and
the fleet, through the real ``asyncwifi`` command in a child process: one line naming
the setting, the documented exit status, no traceback.

Items: 7 (a database that is wrong at start), 8 (an extra not installed), 10 (two syncs
of one organization), 11 (a daemon's passes and /healthz), 12 (a stop at start), 13
(``fleet status`` without Temporal).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi.cli import ExitCode
from tests._stopping import STOP_WITHIN, Child
from tests.cli.conftest import one_clean_line, run_command, run_without
from tests.sync.conftest import PG_HOST, PG_PORT, free_port, http_get, pg_lock, require_postgres

SIM = ("--simulate", "--sim-events-per-day", "200")
DAY = ("--since", "2026-01-01", "--until", "2026-01-02")


def _sync_once(url: str) -> tuple[str, ...]:
    return (*SIM, "sync", "--once", "--to", url, *DAY)


# -- item 7: the database at start ---------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("url", "code", "says"),
    [
        (f"postgresql://nobody_here@{PG_HOST}:{PG_PORT}/postgres", ExitCode.CONFIG,
         'role "nobody_here" does not exist'),
        (f"postgresql://postgres:s3cret@{PG_HOST}:{PG_PORT}/no_such_db", ExitCode.CONFIG,
         'database "no_such_db" does not exist'),
        (f"postgresql://postgres:s3cret@{PG_HOST}:1/postgres", ExitCode.UNAVAILABLE,
         "cannot be reached at start"),
        ("postgresql://postgres@no-such-host.invalid/postgres", ExitCode.UNAVAILABLE,
         "cannot be reached at start"),
    ],
    ids=["unknown-role", "unknown-database", "wrong-port", "unknown-host"],
)  # fmt: skip
def test_a_postgresql_database_wrong_at_start_is_one_line(
    url: str, code: ExitCode, says: str
) -> None:
    require_postgres()
    with pg_lock(exclusive=False):  # not while the restart test has the server down
        result = run_command(*_sync_once(url), timeout=60)
    line = one_clean_line(result, code, "--to postgresql://", says)
    assert "s3cret" not in result.err
    if ":s3cret@" in url:
        assert ":***@" in line


def test_a_sqlite_file_in_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "missing" / "sync.db"
    result = run_command(*_sync_once(f"sqlite:///{db}"), timeout=60)
    one_clean_line(result, ExitCode.CONFIG, f"--to sqlite:///{db}", "does not exist")
    assert not db.parent.exists()


# -- item 8: an extra that is not installed -------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "args", "named"),
    [
        (("asyncpg",), ("sync", "--once", "--to", "postgresql://u@127.0.0.1/db"), "asyncpg"),
        (("prometheus_client",), ("sync", "--once", "--metrics-port", "0", "--to",
                                  "sqlite:///{tmp}/s.db"), "prometheus_client"),
        (("temporalio",), ("fleet", "status"), "temporalio"),
    ],
    ids=["postgres", "metrics-port", "fleet"],
)  # fmt: skip
def test_a_missing_extra_names_a_command_that_works_from_this_clone(
    tmp_path: Path, missing: tuple[str, ...], args: tuple[str, ...], named: str
) -> None:
    from asyncwifi._extras import source_checkout

    args = tuple(arg.replace("{tmp}", str(tmp_path)) for arg in args)
    result = run_without(missing, *SIM, *args)
    line = one_clean_line(result, ExitCode.CONFIG, named, "pip install")
    root = source_checkout()
    assert root is not None  # the tests run from the clone
    extra = "fleet" if named == "temporalio" else "sync"
    assert f'pip install -e "{root}[{extra}]"' in line
    assert "pip install 'asyncwifi[" not in line  # the package is on no index
    assert not (tmp_path / "s.db").exists()


# -- item 12: a stop while the sync gets ready ----------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_stop_while_simulate_generates_data_is_a_sync_stopped_at_once(
    tmp_path: Path, signum: int
) -> None:
    """600,000 events to encode (seconds of work); the stop ends it at once."""
    args = ["--simulate", "--sim-events-per-day", "150000", "sync", "--once",
            "--to", f"sqlite:///{tmp_path / 's.db'}", "--since", "2026-01-01",
            "--until", "2026-01-05"]  # fmt: skip
    async with Child(args) as child:
        await child.reach("generating the embedded simulator's data")
        stopped = await child.stop(signum)
    assert stopped.code == ExitCode.OK, stopped.err
    assert stopped.seconds < STOP_WITHIN, stopped
    assert "Traceback" not in stopped.err
    assert "sync stopped" in stopped.err
    assert "an export keeps its progress" not in stopped.err


def test_ctrl_c_while_the_command_is_imported_is_one_line() -> None:
    """Ctrl-C in the first half second (the command's modules are being imported)."""
    script = (
        "import sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'asyncwifi.cli._command':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        "from asyncwifi.cli import main\n"
        "main()\n"
    )
    result = run_command("--help", argv0=[sys.executable, "-c", script], quiet=False)
    line = one_clean_line(result, ExitCode.INTERRUPTED)
    assert line == "asyncwifi: error: interrupted"


# -- item 10: two syncs of one organization into one database -------------------------------


def _daemon(db: Path, *extra: str) -> list[str]:
    return [*SIM, "sync", "--to", f"sqlite:///{db}", *DAY, "--poll", "1d", *extra]


async def test_a_second_sync_of_the_organization_is_refused_naming_the_first(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    async with Child(_daemon(db)) as first:
        await first.reach("syncing into")
        assert first.proc is not None
        result = await asyncio.to_thread(run_command, *_sync_once(f"sqlite:///{db}"))
        line = one_clean_line(result, ExitCode.TEMPFAIL, f"pid {first.proc.pid}")
        assert "its lease holds until" in line
        assert "--wait-for-lease" in line
        assert first.proc.returncode is None  # the first goes on
        stopped = await first.stop(signal.SIGTERM)
    assert stopped.code == 0, stopped.err
    # the first one released its lease: the next sync starts at once
    assert run_command(*_sync_once(f"sqlite:///{db}")).code == 0


async def test_a_killed_syncs_lease_expires_and_a_waiting_sync_takes_over(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    async with Child(_daemon(db, "--lease-ttl", "4")) as first:
        await first.reach("syncing into")
        wait = [*_sync_once(f"sqlite:///{db}"), "--wait-for-lease", "--lease-ttl", "4"]
        async with Child(wait) as second:
            await second.reach("waiting for it (--wait-for-lease)")
            assert first.proc is not None
            assert second.proc is not None
            first.proc.kill()  # no release: its lease expires 4 s after its last stamp
            rest = await asyncio.wait_for(second.proc.stderr.read(), 60)  # type: ignore[union-attr]
            code = await second.proc.wait()
    err = second.stderr + rest.decode()
    assert code == 0, err
    assert err.count("waiting for it") == 1
    assert "sync pass done" in err
    assert "Traceback" not in err


# -- item 11: a daemon says each pass; /healthz is 503 until one succeeded ----------------

#: the simulated clock starts at noon: a day's quota spent is back only 12 h (216 s) later
NOON = "1768046400"  # 2026-01-10T12:00:00Z
QUICK = ["--simulate", "--sim-speed", "200", "--sim-seed", "3", "--sim-start", NOON,
         "--sim-events-per-day", "2000"]  # fmt: skip


async def test_a_daemon_prints_a_line_per_pass(tmp_path: Path) -> None:
    args = [*QUICK, "sync", "--to", f"sqlite:///{tmp_path / 's.db'}", *DAY,
            "--poll", "1d", "--refresh-every", "1s"]  # fmt: skip
    async with Child(args) as child:
        await child.reach("sync pass 1 done: rows changed")
        await child.reach("sync pass 2 done: rows changed")
        stopped = await child.stop(signal.SIGTERM)
    assert stopped.code == 0, stopped.err
    quiet = [*QUICK, "sync", "--once", "--to", f"sqlite:///{tmp_path / 'q.db'}", *DAY]
    quieted = run_command(*quiet)  # -q: no progress (warnings only)
    assert quieted.code == 0, quieted.err
    assert "sync pass" not in quieted.err


async def test_healthz_is_503_until_a_pass_succeeded(tmp_path: Path) -> None:
    """The day's quota runs out in the first pass (events already stored): not healthy."""
    port = free_port()
    args = [*QUICK, "--sim-day-limit", "4", "sync", "--to", f"sqlite:///{tmp_path / 's.db'}",
            *DAY, "--poll", "1d", "--metrics-port", str(port)]  # fmt: skip
    async with Child(args) as child:
        await child.reach("part of the budget is spent")
        for _ in range(300):  # polled, not guessed: the events follower stored its rows
            _, metrics = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/metrics")
            if 'asyncwifi_sync_rows_total{table="events"}' in metrics:
                break
            await asyncio.sleep(0.1)
        status, body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/healthz")
        stopped = await child.stop(signal.SIGTERM)
    assert 'asyncwifi_sync_rows_total{table="events"}' in metrics  # rows were written
    assert "sync pass 1 done" not in stopped.err  # and no pass succeeded
    assert status == 503, body
    assert "no pass has succeeded yet" in body
    assert stopped.code == 0, stopped.err


# -- item 13: ``fleet status`` without Temporal, and an organization that never ran --------


def test_fleet_status_without_temporal_is_one_line_every_time() -> None:
    """Once in 3 to 18 runs the process used to abort at exit (``Fatal Python error:
    PyGILState_Release``, exit 134): ten runs side by side, each one line and 69."""
    from concurrent.futures import ThreadPoolExecutor

    port = free_port()
    args = ("fleet", "status", "--temporal", f"127.0.0.1:{port}")
    with ThreadPoolExecutor(5) as pool:
        results = list(pool.map(lambda _: run_command(*args, timeout=60), range(10)))
    for result in results:
        assert "Fatal Python error" not in result.err
        line = one_clean_line(result, ExitCode.UNAVAILABLE, f"127.0.0.1:{port}", "--temporal")
        assert "Connection refused" in line
        assert "tonic" not in line  # not the transport's debug chain


def test_an_organization_that_never_ran_has_no_lag() -> None:
    pytest.importorskip("temporalio")
    from asyncwifi.cli._temporal import status_line
    from asyncwifi.fleet._workflow import OrganizationStatus

    never = OrganizationStatus("org-new", newest_event="2023-12-31T00:00:00Z")
    assert "lag never run" in status_line(never)
    ran = OrganizationStatus(
        "org-old", passes=1, last_success="2026-01-02T00:00:00Z",
        newest_event="2026-01-01T23:00:00Z",
    )  # fmt: skip
    assert "lag 1 h" in status_line(ran, now=datetime(2026, 1, 2, tzinfo=UTC))


# -- item 13: the progress lines of an export ------------------------------------------------


def test_progress_says_its_waits_gives_an_eta_and_one_request_count(tmp_path: Path) -> None:
    """70 pages at 60 requests a minute (a clock 10x: a minute is 6 s): the run waits for
    the rate limit once, and says so; the ETA is known from the first slice; the requests
    of the last line are those of the 'done' line (the limiter's one count)."""
    out = tmp_path / "e.jsonl"
    result = run_command(
        "--simulate", "--sim-speed", "10", "--sim-events-per-day", "700", "events",
        "backfill", *DAY, "--out", str(out), "--page-size", "10", "--slice", "6h",
        quiet=False,
    )  # fmt: skip
    assert result.code == 0, result.err
    lines = result.err.splitlines()
    assert "Traceback" not in result.err
    waits = [line for line in lines if line.startswith("waiting for the rate limit")]
    assert waits, result.err
    assert "60 requests a minute" in waits[0]
    assert " s" in waits[0].rpartition("the next in ")[2]  # how long, in real time
    slices = [line for line in lines if line.startswith("slice ")]
    assert len(slices) == 4, result.err
    assert all("ETA ?" not in line for line in slices), slices
    last = int(slices[-1].split(" requests")[0].rpartition("· ")[2].replace(",", ""))
    done = next(line for line in lines if line.startswith("done: "))
    assert f"with {last:,} requests" in done, (slices[-1], done)
