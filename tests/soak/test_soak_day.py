"""A simulated day: three OS processes share one API key through ``RedisStore``.

Each process runs interactive calls, a contacts export and an event backfill at once
against ONE simulator in its own process, all on one scaled time line, until the day quota
is spent. Checked: zero 429s, at least 99 % of the day quota used, no window over its
limit, every exported record exactly once, no task left behind.

The default run scales the day *limit* (300 requests: five minutes at speed 40, about 8 s;
slower than the client could go, so that a loaded CI machine keeps its timing margins).
The long version runs a real scaled day of 15,000 requests (about 3 minutes)::

    .venv/bin/python -m pytest tests/soak -m soak --soak-long -k day
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

from asyncwifi import ScaledClock
from asyncwifi.testing import Simulator, SimulatorProcess
from asyncwifi.testing._process import AnchoredClock

# the long run (--soak-long) takes up to 15 minutes: past the suite-wide 5-minute limit
pytestmark = [pytest.mark.soak, pytest.mark.redis, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
#: 2025-01-01T00:00:10Z: the run stays inside one UTC day of the simulator's fixed windows
DAY_START = 1_735_689_610.0
WORKERS = 3

SHORT = {"speed": 40.0, "day_limit": 300, "events": 20_000, "contacts": 400, "timeout": 120}
LONG = {"speed": 100.0, "day_limit": 15_000, "events": 60_000, "contacts": 2_000, "timeout": 900}


@pytest.fixture
def prefix(redis_url: str) -> Any:
    """A unique Redis key prefix for this run, deleted afterwards (never FLUSHALL)."""
    p = f"asyncwifi:test:soak:{uuid.uuid4().hex[:10]}:"
    yield p
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{p}*"))
    if keys:
        client.delete(*keys)
    client.close()


def check_exports(result: dict[str, Any], data: Any, all_contacts: list[str]) -> int:
    """Every completed export holds exactly the expected ids; a cut one a clean prefix."""
    delivered = 0
    for job in result["events"]:
        expected = data.event_ids(
            f"2024-01-{job['day']:02d}T00:00:00Z", f"2024-01-{job['day']:02d}T23:59:59.999Z"
        )
        ids = job["ids"]
        delivered += len(ids)
        assert len(ids) == len(set(ids)), "an event was delivered twice"
        if job["complete"]:
            assert ids == expected
        else:
            assert ids == expected[: len(ids)]
    for job in result["contacts"]:
        ids = job["ids"]
        delivered += len(ids)
        assert len(ids) == len(set(ids)), "a contact was delivered twice"
        if job["complete"]:
            assert Counter(ids) == Counter(all_contacts)
        else:
            assert set(ids) <= set(all_contacts)
    return delivered


async def test_three_processes_spend_a_scaled_day_without_a_429(
    request: pytest.FixtureRequest, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    shape = LONG if request.config.getoption("--soak-long") else SHORT
    day_limit = shape["day_limit"]
    clock = ScaledClock(shape["speed"], start=DAY_START)
    sim_options: dict[str, Any] = {
        "seed": 9,
        "events": shape["events"],
        "contacts": shape["contacts"],
        "minute_limit": 60,
        "day_limit": day_limit,
    }
    # the same seed gives the same data: the expected ids, without asking the child
    data = Simulator(**sim_options).data
    all_contacts = [c["cid"] for c in data.contacts]
    async with SimulatorProcess(clock=clock, **sim_options) as sim:
        speed, start, anchor = AnchoredClock.describe(clock)
        procs = []
        for worker in range(WORKERS):
            cfg = {
                "worker": worker,
                "base_url": sim.base_url,
                "client_key": sim.client_key,
                "client_secret": sim.client_secret,
                "organization": sim.organization,
                "speed": speed,
                "start": start,
                "anchor": anchor,
                "redis_url": redis_url,
                "key": "soak",
                "prefix": prefix,
                "minute_limit": 60,
                "day_limit": day_limit,
                # the gateway counts at arrival: 5 clock s (83 ms real) of slack for lag
                "minute_margin": 5.0,
                "max_jobs": 10_000,
                "contacts_size": 40,
                "events_size": 50,
                "out": str(tmp_path / f"worker{worker}.json"),
                "watchdog": shape["timeout"] - 10,
            }
            procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-W",
                    "error",
                    "-m",
                    "tests.soak.soak_worker",
                    json.dumps(cfg),
                    cwd=ROOT,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
            )
        try:
            outputs = await asyncio.wait_for(
                asyncio.gather(*(p.communicate() for p in procs)), shape["timeout"]
            )
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
                    await p.wait()
        counters = await sim.counters()

    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err.decode(errors="replace")[-3000:]
        assert not err.strip(), err.decode(errors="replace")[-3000:]  # no warning, no traceback
    results = [json.loads((tmp_path / f"worker{w}.json").read_text()) for w in range(WORKERS)]

    # zero 429s, no window over its limit
    assert counters["rate_limited"] == 0
    assert counters["responses_by_status"].get("429", 0) == 0
    assert counters["max_in_clock_minute"] <= 60
    assert counters["max_in_clock_day"] <= day_limit
    # the day quota was the binding limit and was used to at least 99 %
    assert counters["admitted"] >= 0.99 * day_limit
    for r in results:
        assert set(r["stopped"].values()) <= {"day"}
        assert r["store"] == "redis"
        assert r["tasks_left"] == 0
    assert any(r["stopped"] for r in results), "the run ended before the day quota was spent"
    # every record exactly once, in every export of every process
    delivered = sum(check_exports(r, data, all_contacts) for r in results)
    completed = sum(j["complete"] for r in results for j in r["events"] + r["contacts"])
    assert completed >= WORKERS  # real work was done, not just logins
    assert delivered <= counters["events_served"] + counters["contacts_served"]
    print(
        f"\nsoak: {counters['admitted']}/{day_limit} requests admitted, 0 x 429, "
        f"{delivered} records delivered, {completed} exports completed, "
        f"{sum(r['interactive'] for r in results)} interactive rounds, "
        f"{sum(r['logins'] for r in results)} logins"
    )
