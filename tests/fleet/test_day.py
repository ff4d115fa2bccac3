"""One organization whose key's day is spent (by its other users): its status says so and
when it resumes, it sends nothing until the day's reset (no hot loop: its requests are
counted), then syncs; the other organizations are unaffected. ``asyncwifi fleet status``
prints one line per organization saying all of it (state, last pass, lag, requests today,
last error). In scaled time: the day resets a few real seconds into the test."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from asyncwifi import ScaledClock
from asyncwifi._instant import read_instant
from asyncwifi.cli._command import run
from asyncwifi.fleet._control import apply_fleet
from asyncwifi.fleet._workflow import workflow_id
from asyncwifi.testing import Simulator
from tests.fleet.test_fleet_sync import (
    SIZES,
    config_of,
    events_stored,
    statuses,
    stored,
    until,
    workers,
)

SPEED = 20.0
#: real seconds from the start of the test to the day's reset (UTC midnight, scaled)
RESET_IN = 12.0


def status_lines(
    target: str, orgs: list[str], capsys: pytest.CaptureFixture[str]
) -> dict[str, str]:
    """``asyncwifi fleet status`` as a user runs it: its line for each of ``orgs``."""
    code = run(["fleet", "status", "--temporal", target])
    out = capsys.readouterr().out
    assert code == 0
    lines = [line for line in out.splitlines() if line.split("  ")[0] in orgs]
    assert sorted(line.split("  ")[0] for line in lines) == sorted(orgs), out  # one each
    return {line.split("  ")[0]: line for line in lines}


async def test_a_spent_day_waits_for_the_reset_and_status_says_so(
    temporal: Any, task_queue: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    midnight = (time.time() // 86_400 + 1) * 86_400
    clock = ScaledClock(SPEED, start=midnight - RESET_IN * SPEED)
    async with Simulator(organizations=3, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                         fractional_reset=True, **SIZES) as sim:  # fmt: skip
        config = config_of(sim)
        orgs = list(config.organizations)
        spent = orgs[1]
        tenant = sim.tenant(spent)  # type: ignore[attr-defined]
        tenant.spend_quota(15_000)  # its other users spent the day
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        target = temporal.service_client.config.target_host
        try:
            async with workers(temporal, config, url, task_queue, clock):
                await apply_fleet(temporal, config, task_queue=task_queue)

                async def told() -> bool:
                    found = await statuses(temporal, config)
                    return (
                        len(found) == 3
                        and found[spent].failure == "quota"
                        and all(
                            s.passes >= 1 and s.failure is None
                            for o, s in found.items()
                            if o != spent
                        )
                        and await events_stored(url, [o for o in orgs if o != spent])
                    )

                await until(told, RESET_IN - 2)
                found = await statuses(temporal, config)
                status = found[spent]
                assert status.last_error == "the day's quota is spent"
                assert status.last_success is None
                assert status.next_pass is not None  # the reset, not the poll or a backoff
                resumes = read_instant(status.next_pass).timestamp()
                assert abs(resumes - (time.time() + clock.real(midnight - clock.now()))) < 2.5
                for org in orgs:
                    if org != spent:
                        assert (await stored(url, org, "events"))[1] == SIZES["events"], org
                lines = await asyncio.to_thread(status_lines, target, orgs, capsys)
                assert f"failing (quota) until {status.next_pass}" in lines[spent]
                assert "last error the day's quota is spent" in lines[spent]
                for org in orgs:
                    if org != spent:
                        assert f"{org}  ok  last pass 20" in lines[org]
                        assert "lag " in lines[org]
                        assert "lag -" not in lines[org]
                        assert "requests today -" not in lines[org]
                        assert lines[org].endswith("last error -")
                # waiting for the reset: not one request meanwhile (no hot loop)
                sent = tenant.counters.requests
                assert sent <= 4, sent  # the login and the request that found the day spent
                while clock.now() < midnight - 0.5 * SPEED:
                    assert tenant.counters.requests == sent
                    await asyncio.sleep(0.1)

                async def resumed() -> bool:  # its run reads events beside the refresh
                    found = await statuses(temporal, config)
                    return (
                        found[spent].failure is None
                        and found[spent].passes >= 2
                        and (await stored(url, spent, "events"))[1] == SIZES["events"]
                    )

                await until(resumed, 20)
                ids, count = await stored(url, spent, "events")
                assert ids == set(tenant.data.event_ids())
                assert count == SIZES["events"]
                assert tenant.counters.responses_by_status[429] <= 1
                assert datetime.fromtimestamp(clock.now(), UTC).hour == 0  # the new day
        finally:
            for org in orgs:
                await temporal.get_workflow_handle(workflow_id(org)).terminate()
