"""The command end to end against the embedded simulator (``--simulate``, seeded data).

Exactly-once checks compare the output with the ids the simulator itself says the range
holds (``sim.data.event_ids``): the data depends on the seed and the range only, so the
test builds the same simulator the command builds.
"""

from __future__ import annotations

import gzip
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi._instant import parse_instant
from asyncwifi.cli import ExitCode
from asyncwifi.cli._app import SimOptions
from asyncwifi.cli._simulate import build_simulator
from tests.cli.conftest import Result

MS = timedelta(milliseconds=1)


def expected_ids(
    since: str, until: str, *, seed: int = SimOptions.seed, per_day: int = SimOptions.events_per_day
) -> list[str]:
    start, end = parse_instant(since), parse_instant(until)
    options = SimOptions(enabled=True, seed=seed, events_per_day=per_day)
    sim = build_simulator(options, since=start, until=end, clock=ScaledClock(100))
    return sim.data.event_ids(start, end - MS)


def ids_in(path: Path) -> Counter[str]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    records = (json.loads(line) for line in data.splitlines())
    # the record's id, top level (flat shape) or under "event" (the nested default)
    return Counter(r["event"]["id"] if "event" in r else r["id"] for r in records)


def assert_exactly_once(path: Path, expected: list[str]) -> None:
    counts = ids_in(path)
    assert len(expected) == len(set(expected)) > 0
    missing = set(expected) - set(counts)
    assert not missing, f"{len(missing)} events missing"
    assert set(counts) == set(expected), "events outside the range were written"
    repeated = [i for i, n in counts.items() if n > 1]
    assert not repeated, f"{len(repeated)} events written twice"


def command() -> list[str]:
    script = Path(sys.executable).with_name("asyncwifi")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from asyncwifi.cli import main; sys.exit(main())"]


def test_the_readmes_main_command(clean_env: Path) -> None:
    """Exactly the command the README shows, as a user types it."""
    proc = subprocess.run(
        [
            *command(),
            "--simulate",
            "events",
            "backfill",
            "--since",
            "2026-01-01",
            "--until",
            "2026-01-08",
            "--out",
            "events.jsonl",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "done: 70,000 events in events.jsonl" in proc.stderr
    assert_exactly_once(clean_env / "events.jsonl", expected_ids("2026-01-01", "2026-01-08"))
    # every line is the server's own JSON, with the documented fields
    with (clean_env / "events.jsonl").open() as fh:
        first = json.loads(fh.readline())
    assert {"event", "when", "where"} <= set(first)  # the nested shape, exactly as served


def test_interrupted_then_killed_at_random_moments_then_resumed_writes_each_event_once(
    clean_env: Path,
) -> None:
    """SIGTERM once (exit 130, progress saved), SIGKILL twice mid-run, then to the end."""
    since, until, per_day = "2026-02-01", "2026-02-03", 20_000
    args = [
        *command(),
        "--simulate",
        "--sim-seed",
        "11",
        "--sim-events-per-day",
        str(per_day),
        "--log-format",
        "json",
        "events",
        "backfill",
        "--since",
        since,
        "--until",
        until,
        "--page-size",
        "400",  # 100 pages: each killed run stops well before the end
        "--slice",
        "12h",
        "--out",
        "events.jsonl",
    ]
    rnd = random.Random(2026)
    outcomes = []
    for signum in (signal.SIGTERM, signal.SIGKILL, signal.SIGKILL):
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        assert proc.stderr is not None
        # a run that hangs must fail the test, not stall it
        watchdog = threading.Timer(60, proc.kill)
        watchdog.start()
        wanted = rnd.randrange(1, 8)
        pages = 0
        for line in proc.stderr:
            if '"event": "page"' in line:
                pages += 1
                if pages == wanted:
                    time.sleep(rnd.uniform(0, 0.03))  # mid-page, mid-write or mid-commit
                    proc.send_signal(signum)
                    break
        rest = proc.stderr.read()
        proc.wait(timeout=60)
        watchdog.cancel()
        proc.stderr.close()
        outcomes.append((signum, proc.returncode, rest))
    term = outcomes[0]
    assert term[1] == ExitCode.INTERRUPTED, term[2]
    assert "interrupted" in term[2]
    assert [code for _, code, _ in outcomes[1:]].count(-signal.SIGKILL) >= 1
    final = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert final.returncode == 0, final.stderr
    started = [json.loads(x) for x in final.stderr.splitlines() if '"event": "started"' in x]
    assert started[0]["resumed"] is True
    assert_exactly_once(
        clean_env / "events.jsonl", expected_ids(since, until, seed=11, per_day=per_day)
    )


def cli(*args: str) -> Result:
    """Run the command in a subprocess (a hang fails after a minute instead of stalling)."""
    proc = subprocess.run(
        [*command(), *args], capture_output=True, text=True, timeout=60, check=False
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize(
    "slicing",
    [
        ("--slice", "1d"),
        # many small slices, one at a time: a new scroll starts when the quota is spent
        ("--slice", "4h", "--concurrency", "1"),
    ],
)
def test_a_spent_quota_exits_75_with_the_reset_time_and_the_next_runs_resume(
    clean_env: Path, slicing: tuple[str, ...]
) -> None:
    args = (
        "--simulate",
        "--sim-day-limit",
        "10",
        "--sim-events-per-day",
        "20000",
        "events",
        "backfill",
        "--since",
        "2026-01-01",
        "--until",
        "2026-01-02",
        "--page-size",
        "2000",
        *slicing,
        "--out",
        "events.jsonl",
    )
    first = cli(*args)
    assert first.code == ExitCode.TEMPFAIL == 75, first.err
    assert "quota is spent; progress is saved" in first.err
    assert "run the same command again after 20" in first.err
    written = sum(ids_in(clean_env / "events.jsonl").values())
    assert 0 < written < 20_000
    codes = [first.code]
    for _ in range(6):
        result = cli(*args)
        codes.append(result.code)
        if result.code == 0:
            break
    assert codes[-1] == 0, codes
    assert set(codes[:-1]) == {75}
    assert_exactly_once(
        clean_env / "events.jsonl", expected_ids("2026-01-01", "2026-01-02", per_day=20_000)
    )
    again = cli(*args)
    assert again.code == 0
    assert "already complete" in again.err


def _day_of_four_requests(*global_options: str) -> tuple[str, ...]:
    """A backfill of a day of 20,000 events in pages of 1,000, on a simulated day whose
    quota is 4 requests (the login and 3 pages), 18 h before the day's reset."""
    start = datetime(2026, 3, 1, 6, 0, tzinfo=UTC).timestamp()
    return (
        "--simulate",
        "--sim-start",
        str(start),
        "--sim-day-limit",
        "4",
        "--sim-events-per-day",
        "20000",
        *global_options,
        "events",
        "backfill",
        "--since",
        "2026-01-01",
        "--until",
        "2026-01-02",
        "--page-size",
        "1000",
        "--out",
        "events.jsonl",
    )


def test_daemon_mode_exits_75_when_the_reset_is_further_than_max_wait(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    # (waiting through a reset is covered by the engine's tests, on a stepped clock)
    result = run(*_day_of_four_requests("--log-format", "json"), "--wait", "--max-wait", "1h")
    assert result.code == ExitCode.TEMPFAIL, result.err
    records = [json.loads(line) for line in result.err.splitlines() if line.startswith("{")]
    paused = [r for r in records if r["event"] == "quota_exhausted"]
    assert len(paused) == 1
    assert paused[0]["waiting"] is False
    assert paused[0]["reset_at"] >= "2026-03-02T00:00:00Z"
    assert paused[0]["records"] == sum(ids_in(clean_env / "events.jsonl").values()) > 0


def test_a_spent_quota_loses_no_page_that_concurrent_slices_fetched(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    # a day of 4 requests: the login and 3 pages of 1,000, fetched by 4 concurrent slices.
    # One slice's refusal must not cancel the others before they commit what they paid for
    result = run(*_day_of_four_requests(), "--concurrency", "4")
    assert result.code == ExitCode.TEMPFAIL, result.err
    written = ids_in(clean_env / "events.jsonl")
    assert sum(written.values()) == len(written) == 3_000


def test_gzip_output_is_a_valid_gzip_of_every_event(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run(
        "-q",
        "--simulate",
        "events",
        "backfill",
        "--since",
        "2026-01-01",
        "--until",
        "2026-01-03",
        "--types",
        "visit,login",
        "--out",
        "events.jsonl.gz",
    )
    assert result.code == 0, result.err
    assert result.err == ""  # quiet
    opts = SimOptions(enabled=True)  # the default --simulate: Simulator.DEFAULTS.seed
    start, end = parse_instant("2026-01-01"), parse_instant("2026-01-03")
    sim = build_simulator(opts, since=start, until=end, clock=ScaledClock(100))
    assert_exactly_once(
        clean_env / "events.jsonl.gz", sim.data.event_ids(start, end - MS, ["visit", "login"])
    )


def test_contacts_export_writes_every_contact_once(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--simulate", "contacts", "export", "--out", "contacts.jsonl")
    assert result.code == 0, result.err
    lines = (clean_env / "contacts.jsonl").read_text().splitlines()
    cids = Counter(json.loads(line)["cid"] for line in lines)
    assert len(cids) == SimOptions.contacts
    assert max(cids.values()) == 1


def test_resource_commands_print_json(clean_env: Path, run: Callable[..., Result]) -> None:
    hotspots = run("-q", "--simulate", "hotspots", "list")
    assert hotspots.code == 0, hotspots.err
    listed = json.loads(hotspots.out)
    assert listed
    assert all("id" in h for h in listed)
    segments = run("-q", "--simulate", "segments", "list")
    assert segments.code == 0, segments.err
    assert json.loads(segments.out)
    quota = run("-q", "--simulate", "quota", "--format", "json")
    assert quota.code == 0, quota.err
    snapshot = json.loads(quota.out)
    assert snapshot["windows"]["day"]["remaining"] == 15_000 - 1  # the login
    assert snapshot["requests_spent_by_this_command"] == 1


def test_hotspot_create_update_delete_and_a_missing_one(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    listed = run("-q", "--simulate", "hotspots", "list")
    venue = json.loads(listed.out)[0]["venueId"]
    body = {
        "venueId": venue,
        "name": "Lobby",
        "routerType": "generic",
        "ssid": "Guest",
        "addressAsLocation": False,
        "country": "IT",
        "address": "Via Roma 1",
        "city": "Milano",
        "zip": "20100",
    }
    (clean_env / "h.json").write_text(json.dumps(body))
    created = run("-q", "--simulate", "hotspots", "create", "--data", "@h.json")
    assert created.code == 0, created.err
    assert json.loads(created.out)["hotspotId"]
    first = json.loads(listed.out)[0]["id"]
    updated = run("-q", "--simulate", "hotspots", "update", first, "--data", '{"name": "Renamed"}')
    assert updated.code == 0, updated.err
    assert json.loads(updated.out)["status"]
    deleted = run("-q", "--simulate", "hotspots", "delete", first, "--yes")
    assert deleted.code == 0, deleted.err
    bad = run("-q", "--simulate", "hotspots", "get", "no-such-hotspot")
    assert bad.code == ExitCode.FAILURE
    assert bad.err.startswith("asyncwifi: error: 404")
