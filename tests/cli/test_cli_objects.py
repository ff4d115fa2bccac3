"""Objects (spec §8) where a user sees a job planned or reported: ``--allowance`` (and its
variable) checked before anything is sent; ``quota`` showing the month's and the day's
objects by kind against the allowance; the backfill dry run's objects line against what is
left of the month (read from the shared rate store, never a request), warning past it; the
progress lines and JSON fields carrying the run's objects; a spent allowance named as such.

Runs against the embedded simulator (``--simulate``); the month's counts live in Redis under
a key of the test's own seed (removed afterwards)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncwifi.cli import ExitCode
from tests.cli.conftest import Result

REDIS = "redis://127.0.0.1:6379/0"
WEEK = ("--since", "2026-01-01", "--until", "2026-01-08")


def lines_of(text: str, start: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(start)]


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def seed() -> Iterator[int]:
    """A simulator seed of this test's own, its key's counts in Redis removed afterwards."""
    from tests.ratelimit.rlhelpers import require_redis

    require_redis()
    import redis

    from asyncwifi.ratelimit._redis import key_name
    from asyncwifi.testing import Simulator

    chosen = random.randrange(1 << 30)
    name = key_name(Simulator(seed=chosen, events=0).client_key)
    conn = redis.Redis.from_url(REDIS)
    try:
        yield chosen
    finally:
        for key in conn.scan_iter(f"asyncwifi:*{{{name}}}*"):
            conn.delete(key)
        conn.close()


def month_in_redis(seed: int) -> dict[str, int]:
    """The month's objects of the simulated key of ``seed``, as the limiter reads them."""
    from asyncwifi.ratelimit import RedisStore, Scheduler
    from asyncwifi.ratelimit._redis import key_name
    from asyncwifi.testing import Simulator

    async def read() -> dict[str, int]:
        store = RedisStore(REDIS, key=key_name(Simulator(seed=seed, events=0).client_key))
        async with Scheduler(store=store) as scheduler:
            return await scheduler.objects()

    return asyncio.run(read())


def spend_in_redis(seed: int, kind: str, count: int) -> None:
    """``count`` objects of ``kind`` counted now for the key, as another process would."""
    from asyncwifi.ratelimit import RedisStore
    from asyncwifi.ratelimit._redis import key_name
    from asyncwifi.testing import Simulator

    async def add() -> None:
        store = RedisStore(REDIS, key=key_name(Simulator(seed=seed, events=0).client_key))
        import time

        await store.add_objects(time.time(), kind, count)
        await store.aclose()

    asyncio.run(add())


# -- the allowance -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (("--allowance", "lots"), "--allowance: 'lots' is not an allowance"),
        (("--allowance", "0"), "--allowance must be a whole number of objects >= 1"),
        (("--allowance", "10 rooms"), "access points (10 access points: 2,000 each)"),
    ],
)
def test_a_bad_allowance_is_one_usage_line_before_anything(
    clean_env: Path, run: Callable[..., Result], given: tuple[str, ...], named: str
) -> None:
    result = run(*given, "--simulate", "events", "backfill", *WEEK, "--out", "e.jsonl")
    assert result.code == ExitCode.USAGE == 2
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("asyncwifi: error: ")
    assert named in lines[0]
    assert "simulating" not in result.err  # nothing started, nothing sent
    assert list(clean_env.iterdir()) == []


def test_the_variable_is_read_and_named_when_wrong(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASYNCWIFI_ALLOWANCE", "a lot")
    result = run("--simulate", "quota", "--format", "json")
    assert result.code == 2
    assert "ASYNCWIFI_ALLOWANCE: 'a lot' is not an allowance" in result.err
    monkeypatch.setenv("ASYNCWIFI_ALLOWANCE", "3 access points")
    result = run("--simulate", "quota", "--format", "json")
    assert result.code == 0, result.err
    objects = json.loads(result.out)["objects"]
    assert objects["allowance"] == {"all": 6_000}
    assert objects["note"] is None


# -- quota ---------------------------------------------------------------------------------


def test_quota_shows_the_objects_of_a_few_calls_against_the_allowance(
    clean_env: Path, run: Callable[..., Result], seed: int
) -> None:
    common = ("--simulate", "--sim-seed", str(seed), "--allowance", "1000 contacts")
    # a few calls through the command, counted in the key's shared store
    exported = run(*common, "contacts", "export", "--out", "c.jsonl", "--rate-store", REDIS)
    assert exported.code == 0, exported.err
    contacts = len((clean_env / "c.jsonl").read_text().splitlines())
    backfill = ("events", "backfill", "--since", "2026-01-01", "--until", "2026-01-02")
    done = run(*common, "--sim-events-per-day", "700", *backfill, "--out", "e.jsonl",
               "--rate-store", REDIS)  # fmt: skip
    assert done.code == 0, done.err
    assert month_in_redis(seed) == {"contacts": contacts, "events": 700}

    result = run(*common, "quota", "--rate-store", REDIS, "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["requests_spent_by_this_command"] == 1  # the login: no object read
    objects = report["objects"]
    kinds = [row["kind"] for row in objects["by_kind"]]
    assert kinds == ["events", "contacts", "hotspots", "segments", "webhooks", "all"]  # once each
    rows = {row["kind"]: row for row in objects["by_kind"]}
    assert rows["contacts"]["this_month"] == rows["contacts"]["today"] == contacts
    assert rows["events"]["this_month"] == rows["events"]["today"] == 700
    assert rows["hotspots"]["this_month"] == 0
    total = contacts + 700
    assert rows["all"]["this_month"] == total
    assert rows["all"]["allowance"] == 10_000  # 1,000 contacts at 10 objects each
    assert rows["all"]["left"] == 10_000 - total
    assert objects["counted_by"] == "every user of the key (the rate store)"
    assert objects["resets_at"].endswith("-01T00:00:00Z")

    table = run(*common, "quota", "--rate-store", REDIS, "--format", "text")
    assert table.code == 0, table.err
    assert any(
        "all" in line and f"{total}" in line and f"{10_000 - total}" in line
        for line in table.out.splitlines()
    ), table.out
    assert f"objects of {objects['month']} (UTC), counted by every user" in table.out


def test_quota_without_an_allowance_or_a_shared_store_says_so(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--simulate", "quota", "--format", "text")
    assert result.code == 0, result.err
    assert "counted by this process alone (no --rate-store" in result.out
    assert (
        "no allowance known: give the month's with --allowance or ASYNCWIFI_ALLOWANCE" in result.out
    )
    report = json.loads(run("--simulate", "quota", "--format", "json").out)["objects"]
    assert report["allowance"] is None
    assert all(row["this_month"] == 0 and row["left"] is None for row in report["by_kind"])


# -- the dry run ---------------------------------------------------------------------------

DRY = ("events", "backfill", *WEEK, "--out", "e.jsonl", "--dry-run")


def test_a_dry_run_without_an_allowance_prints_the_objects_and_how_to_give_one(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--simulate", *DRY)
    assert result.code == 0, result.err
    (line,) = lines_of(result.out, "objects: ")
    assert line == (
        "objects: 70,000 (the events, each read once; a closing empty page costs 0); "
        "allowance unknown (--allowance or ASYNCWIFI_ALLOWANCE)"
    )
    assert "warning" not in result.err
    summary = json.loads(run("--simulate", "--log-format", "json", *DRY).out)
    assert summary["estimated_objects"] == summary["estimated_events"] == 70_000
    assert summary["objects_allowance"] is None
    assert summary["objects_warning"] is None
    assert summary["requests_spent_by_dry_run"] == 0
    assert list(clean_env.iterdir()) == []


def test_a_dry_run_without_a_shared_store_knows_only_the_allowance(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--simulate", "--allowance", "50 access points", *DRY)  # 100,000
    assert result.code == 0, result.err
    (line,) = lines_of(result.out, "objects: ")
    assert "70,000" in line
    assert "at most 100,000 left of the month's allowance of 100,000" in line
    assert "month-to-date unknown: without a shared --rate-store only this process's" in line
    assert "warning" not in result.err
    # the whole allowance is less than the job: a warning, whatever the month holds
    small = run("--simulate", "--allowance", "60000", *DRY)
    assert small.code == 0
    (warning,) = lines_of(small.err, "asyncwifi: warning: ")
    assert "the job's 70,000 objects exceed the 60,000 in the month's allowance" in warning


def test_a_dry_run_reads_the_month_from_the_shared_store_and_warns_past_what_is_left(
    clean_env: Path, run: Callable[..., Result], seed: int
) -> None:
    spend_in_redis(seed, "contacts", 15_000)  # other users of the key, this month
    spend_in_redis(seed, "events", 5_000)
    common = ("--simulate", "--sim-seed", str(seed), "--allowance", "100000")
    fits = run(*common, *DRY, "--rate-store", REDIS)
    assert fits.code == 0, fits.err
    (line,) = lines_of(fits.out, "objects: ")
    assert "80,000 left of the month's allowance of 100,000 (20,000 exchanged this month" in line
    assert "warning" not in fits.err  # the job's 70,000 fit

    spend_in_redis(seed, "events", 55_000)  # now 75,000 spent: 25,000 left
    over = run(*common, "--log-format", "json", *DRY, "--rate-store", REDIS)
    assert over.code == 0, over.err  # a warning, not a failure
    summary = json.loads(over.out)
    assert summary["estimated_objects"] == 70_000
    assert summary["objects_month"] == 75_000
    assert summary["objects_left_month"] == 25_000
    assert summary["objects_allowance"] == {"all": 100_000}
    assert "exceed the 25,000 left this month" in str(summary["objects_warning"])
    (warning,) = [r for r in json_lines(over.err) if r["level"] == "warning"]
    assert warning["event"] == "objects"
    # reading the store sent nothing and counted nothing
    assert month_in_redis(seed) == {"contacts": 15_000, "events": 60_000}


# -- progress ------------------------------------------------------------------------------

TWO_DAYS = ("events", "backfill", "--since", "2026-01-01", "--until", "2026-01-03",
            "--page-size", "1000", "--out", "e.jsonl")  # fmt: skip


def test_progress_lines_carry_the_runs_objects_and_what_is_left(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    # a clock of 10x (not --simulate's 100x): a scroll's minute lasts 6 real seconds, so a
    # loaded machine does not let it lapse (a resume reads its boundary event again: 6,003)
    common = ("--simulate", "--sim-speed", "10", "--sim-events-per-day", "3000",
              "--allowance", "10000")  # fmt: skip
    result = run(*common, *TWO_DAYS)
    assert result.code == 0, result.err
    slices = lines_of(result.err, "slice ")
    assert len(slices) == 4
    assert all(" requests · " in line and " objects" in line for line in slices)
    # each event read once: the run's objects are its events, 4,000 of 10,000 left
    assert "6,000 events · " in slices[-1]
    assert "· 6,000 objects (at most 4,000 left this month) ·" in slices[-1]

    (clean_env / "e.jsonl").unlink()
    (clean_env / "e.jsonl.state").unlink()
    result = run(*common, "--log-format", "json", *TWO_DAYS)
    assert result.code == 0, result.err
    records = json_lines(result.err)
    pages = [r for r in records if r["event"] == "page"]
    assert pages
    for page in pages:  # a page is counted when it arrives, before it is committed
        assert isinstance(page["objects_run"], int)
        assert isinstance(page["records_run"], int)
        assert page["objects_run"] >= page["records_run"]
        assert page["objects_left_month"] == 10_000 - page["objects_month"]  # type: ignore[operator]
    (finished,) = [r for r in records if r["event"] == "finished"]
    assert finished["objects_run"] == finished["records_run"] == 6_000
    assert finished["objects_month"] == 6_000
    assert finished["objects_left_month"] == 4_000
    assert finished["objects_month_shared"] is False  # others' objects not known: at most


def test_the_runs_objects_count_from_the_months_count_when_it_began(
    clean_env: Path, run: Callable[..., Result], seed: int
) -> None:
    spend_in_redis(seed, "events", 5_000)  # another process of the key, earlier this month
    result = run("--simulate", "--sim-seed", str(seed), "--sim-events-per-day", "3000",
                 "--allowance", "20000", "--log-format", "json", *TWO_DAYS,
                 "--rate-store", REDIS)  # fmt: skip
    assert result.code == 0, result.err
    (finished,) = [r for r in json_lines(result.err) if r["event"] == "finished"]
    assert finished["objects_run"] == 6_000  # this run's, not the month's
    assert finished["objects_month"] == 11_000  # every process's
    assert finished["objects_left_month"] == 9_000
    assert finished["objects_month_shared"] is True
    assert month_in_redis(seed) == {"events": 11_000}


def test_a_spent_allowance_pauses_the_export_and_says_which_quota(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    common = ("--simulate", "--allowance", "1500")
    export = ("contacts", "export", "--out", "c.jsonl", "--page-size", "500")
    result = run(*common, *export)
    assert result.code == ExitCode.TEMPFAIL == 75
    (plan,) = lines_of(result.err, "plan: ")
    assert "one object per contact" in plan
    assert "at most 1,500 left of the month's allowance of 1,500" in plan
    (warning,) = lines_of(result.err, "asyncwifi: warning: ")
    assert "the month's object allowance is spent; progress is saved (1,500 contacts)" in warning
    assert "-01T00:00:00Z to resume" in warning  # the 1st of the next month
    assert len((clean_env / "c.jsonl").read_text().splitlines()) == 1_500

    again = run(*common, "--log-format", "json", *export)  # resumes, and is held back again
    assert again.code == 75
    (paused,) = [r for r in json_lines(again.err) if r["event"] == "quota_exhausted"]
    assert paused["quota"] == "month"
    assert str(paused["message"]).startswith("the month's object allowance is spent")


def test_the_runs_objects_go_on_across_the_1st() -> None:
    from types import SimpleNamespace as At

    from asyncwifi.cli._progress import _RunObjects
    from asyncwifi.ratelimit._snapshot import VolumeSnapshot

    def at(month: str, **counts: int) -> Any:
        return At(volume=VolumeSnapshot(month, counts))

    spent = _RunObjects(at("2026-11", events=500))  # the month's count when the run began
    assert spent.read(at("2026-11", events=800)) == 300
    assert spent.read(at("2026-12")) == 300  # the 1st: the month starts over, the run's not
    assert spent.read(at("2026-12", events=40, contacts=2)) == 342


def test_a_spent_allowance_raised_to_the_command_is_named() -> None:
    from asyncwifi.cli._command import _status_for
    from asyncwifi.errors import QuotaExhaustedError

    allowance = "month's object allowance"
    for limit, said in (("month", allowance), ("month:events", allowance), ("day", "day's quota")):
        found = _status_for(QuotaExhaustedError("x", reset_at=1_796_083_200.0, limit=limit))
        assert found == (
            ExitCode.TEMPFAIL,
            f"the {said} is spent; it resets at 2026-12-01T00:00:00Z",
        )
