"""The database down (PostgreSQL behind a proxy that is cut): every organization waits, its
status saying the database is unreachable, and none spends quota on data it cannot store
(the simulator's per-organization request counters stand still); restored, the fleet
carries on by itself, every row stored once."""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from asyncwifi import ScaledClock
from asyncwifi._instant import read_instant
from asyncwifi.engine import open_destination
from asyncwifi.fleet._control import apply_fleet
from asyncwifi.fleet._worker import WorkerOptions, run_worker
from asyncwifi.fleet._workflow import OrganizationWorkflow, workflow_id
from asyncwifi.testing import Simulator
from tests._proxy import CuttableProxy
from tests.fleet._procs import through
from tests.fleet.test_fleet_sync import SIZES, config_of, events_stored, statuses, stored, until
from tests.sync.conftest import PG_PORT, pg_database, pg_lock, require_postgres

#: real seconds the database stays down (a pass gives up after ``PATIENCE``)
DOWN = 4.0
PATIENCE = 1.0
NEW = 25


async def caught_up(url: str, organization: str, now: float) -> bool:
    """Whether the organization's event feed has read up to ``now`` (clock seconds, less
    a minute): its run follows new events from there (its first pass read its history while
    it refreshed the rest, to now from ``since``, a day a request)."""
    view = open_destination(url, organization=organization)  # type: ignore[call-arg]
    await view.open()
    try:
        saved = await view.checkpoint("events")
    finally:
        await view.close()
    if saved is None:
        return False
    return read_instant(json.loads(saved)["at"]).timestamp() >= now - 60


async def test_the_database_down_every_organization_waits_without_spending(
    temporal: Any, task_queue: str, tmp_path: Path
) -> None:
    require_postgres()
    clock = ScaledClock(20.0)
    proxy = CuttableProxy(PG_PORT)
    await proxy.start()
    stop = asyncio.Event()
    with pg_lock(exclusive=False):
        async with (
            pg_database() as url,
            Simulator(organizations=3, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                      fractional_reset=True, **SIZES) as sim,
        ):  # fmt: skip
            # events added now are stamped in whole seconds (rounded down): a feed that
            # polls every clock second reads up to 5 s before now, else it may pass them
            config = config_of(sim, poll=1, settle=5)
            orgs = list(config.organizations)
            tenants = {org: sim.tenant(org) for org in orgs}  # type: ignore[attr-defined]
            options = WorkerOptions(task_queue=task_queue, clock=clock, store_patience=PATIENCE)
            worker = asyncio.create_task(
                run_worker(temporal, config, through(url, proxy.port), options=options, stop=stop)
            )
            try:
                await apply_fleet(temporal, config, task_queue=task_queue)

                async def all_synced() -> bool:
                    found = await statuses(temporal, config)
                    return (
                        len(found) == 3
                        and all(s.passes >= 1 and s.failure is None for s in found.values())
                        and await events_stored(url, found)
                        and all([await caught_up(url, org, clock.now()) for org in orgs])
                    )

                await until(all_synced, 30)
                proxy.cut()
                at_cut = {org: tenants[org].counters.requests for org in orgs}
                for org in orgs:  # new data the fleet cannot store now
                    tenants[org].add_events(NEW)
                    await temporal.get_workflow_handle(workflow_id(org)).signal(
                        OrganizationWorkflow.sync_now
                    )

                seen: dict[str, Any] = {}

                async def all_waiting() -> bool:  # each seen waiting (its next try may start)
                    for org, status in (await statuses(temporal, config)).items():
                        if status.failure == "database" and status.state == "failing":
                            seen[org] = status
                    return len(seen) == len(orgs)

                await until(all_waiting, 20)
                for status in seen.values():
                    assert "unreachable" in (status.last_error or ""), status.last_error
                # down: no organization sends a request beyond its feed's read-ahead at the
                # cut (a run reads on while it refreshes: the page whose write failed, the
                # one fetched ahead, and the one the feed sent before it saw the failure)
                waiting = {org: tenants[org].counters.requests for org in orgs}
                for org in orgs:
                    assert waiting[org] - at_cut[org] <= 3, (org, at_cut, waiting)
                deadline = time.monotonic() + DOWN
                while time.monotonic() < deadline:
                    assert {org: tenants[org].counters.requests for org in orgs} == waiting
                    await asyncio.sleep(0.1)
                assert (await statuses(temporal, config))[orgs[0]].failures >= 2  # retried
                proxy.up = True  # restored: the fleet carries on by itself

                async def all_stored() -> bool:
                    found = await statuses(temporal, config)
                    counts = [(await stored(url, org, "events"))[1] for org in orgs]
                    return all(c == SIZES["events"] + NEW for c in counts) and all(
                        s.failure is None for s in found.values()
                    )

                await until(all_stored, 30)
                for org in orgs:
                    ids, count = await stored(url, org, "events")
                    assert ids == set(tenants[org].data.event_ids()), org
                    assert count == len(ids), org
                    assert tenants[org].counters.responses_by_status[429] == 0, org
            finally:
                stop.set()
                await worker
                for org in orgs:
                    await temporal.get_workflow_handle(workflow_id(org)).terminate()
                await proxy.close()
