"""A worker's graceful stop (SIGTERM) is prompt: a pass in flight is cancelled, its batch
in hand dropped (the database's checkpoint is the truth), and the process exits 0 within a
few seconds; the next worker continues from the checkpoint, each row once."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from asyncwifi import ScaledClock
from asyncwifi.fleet._control import apply_fleet
from asyncwifi.fleet._workflow import workflow_id
from asyncwifi.testing import Faults, Simulator
from tests.fleet._procs import worker_processes, write_config
from tests.fleet.test_fleet_sync import config_of, stored, until
from tests.fleet.test_takeover import SIZES, SPEED, part_stored

#: the longest a graceful stop may take (it took ~10 s: the SDK's graceful timeout)
PROMPT = 4.0


async def test_sigterm_stops_a_worker_mid_pass_promptly(
    temporal: Any, task_queue: str, tmp_path: Path
) -> None:
    clock = ScaledClock(SPEED)
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    async with Simulator(organizations=1, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                         fractional_reset=True, faults=Faults(latency=0.3 * SPEED),
                         **SIZES) as sim:  # fmt: skip
        path = write_config(tmp_path / "fleet.toml", sim)
        config = config_of(sim)
        (org,) = config.organizations
        target = temporal.service_client.config.target_host
        try:
            with worker_processes([url], path, target, task_queue, clock, tmp_path) as procs:
                await apply_fleet(temporal, config, task_queue=task_queue, heartbeat_timeout=2)
                await until(lambda: _mid_pass(procs[0], url, org), 30)
                begun = time.monotonic()
                procs[0].signal(signal.SIGTERM)
                # waited for off the loop: the simulator answers what is in flight meanwhile
                code = await asyncio.to_thread(procs[0].proc.wait, 15)
                took = time.monotonic() - begun
                assert code == 0, procs[0].output()[-3000:]
                assert took < PROMPT, f"the graceful stop took {took:.1f} s"
            # the next worker continues from the checkpoint: each row once
            (tmp_path / "b").mkdir()
            with worker_processes([url], path, target, task_queue, clock, tmp_path / "b") as _:

                async def done() -> bool:  # a run reads events while it refreshes the rest
                    counts = [(await stored(url, org, k))[1] for k in ("segments", "events")]
                    return counts == [SIZES["segments"], SIZES["events"]]

                await until(done, 30)
            tenant = sim.tenant(org)  # type: ignore[attr-defined]
            ids, count = await stored(url, org, "events")
            assert ids == set(tenant.data.event_ids())
            assert count == SIZES["events"]
        finally:
            await temporal.get_workflow_handle(workflow_id(org)).terminate()


async def _mid_pass(proc: Any, url: str, org: str) -> bool:
    proc.check()
    try:
        return await part_stored(url, [org]) is not None
    except Exception:  # the database not created yet
        return False
