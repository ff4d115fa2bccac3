"""The Temporal server restarted under a running fleet: a dev server of this test's own,
with a database file, stopped (SIGTERM) mid-run and started again on the same port and
file. The worker reconnects by itself, the workflows carry on (events added while the
server was down are stored after the restart), every row exactly once."""

from __future__ import annotations

import asyncio
import random
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from asyncwifi import ScaledClock
from asyncwifi.cli._temporal import temporal_cli
from asyncwifi.fleet._control import apply_fleet
from asyncwifi.fleet._worker import WorkerOptions, run_worker
from asyncwifi.fleet._workflow import workflow_id
from asyncwifi.testing import Simulator
from tests.fleet.conftest import _wait_for_port, connect_when_healthy, free_port, stop_process
from tests.fleet.test_fleet_sync import SIZES, config_of, statuses, stored, until

NEW = 40


@contextmanager
def dev_server(cli: str, port: int, database: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``temporal server start-dev`` on ``port`` with ``database``; stopped (SIGTERM) at the
    end if the test left it running."""
    argv = [cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
            "--ui-port", str(free_port()), "--http-port", str(free_port()),
            "--metrics-port", str(free_port()), "--db-filename", str(database),
            "--log-level", "error"]  # fmt: skip
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        assert _wait_for_port(port, 30), log.read_text(errors="replace")[-2000:]
        yield proc
    finally:
        stop_process(proc)


async def test_the_fleet_carries_on_after_the_temporal_server_restarts(
    temporal_target: str, tmp_path: Path
) -> None:
    cli = temporal_cli()
    assert cli is not None  # the session's server started from it
    port, database, log = free_port(), tmp_path / "temporal.db", tmp_path / "temporal.log"
    target = f"127.0.0.1:{port}"
    clock = ScaledClock(20.0)
    async with Simulator(organizations=3, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                         fractional_reset=True, **SIZES) as sim:  # fmt: skip
        config = config_of(sim, poll=1, settle=5)  # events added now: read once settled
        orgs = list(config.organizations)
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        stop = asyncio.Event()
        with dev_server(cli, port, database, log) as server:
            client = await connect_when_healthy(target)
            options = WorkerOptions(task_queue="restart", clock=clock)
            worker = asyncio.create_task(run_worker(client, config, url, options=options,
                                                    stop=stop))  # fmt: skip
            try:
                await apply_fleet(client, config, task_queue="restart", heartbeat_timeout=2)

                async def synced(expected: int) -> bool:
                    assert not worker.done(), worker
                    counts = [(await stored(url, org, "events"))[1] for org in orgs]
                    return all(c == expected for c in counts)

                await until(lambda: synced(SIZES["events"]), 30)
                server.terminate()  # SIGTERM: the server goes away mid-run
                assert server.wait(15) is not None
                for org in orgs:  # events the fleet will sync once the server is back
                    sim.tenant(org).add_events(NEW)  # type: ignore[attr-defined]
                await asyncio.sleep(1.0)  # the worker finds the server gone
                with dev_server(cli, port, database, log):
                    await until(lambda: synced(SIZES["events"] + NEW), 40)
                    assert not worker.done()  # the same worker, reconnected
                    fresh = await connect_when_healthy(target)
                    found = await statuses(fresh, config)
                    assert sorted(found) == sorted(orgs)  # the workflows survived
                    for org in orgs:
                        tenant = sim.tenant(org)  # type: ignore[attr-defined]
                        ids, count = await stored(url, org, "events")
                        assert ids == set(tenant.data.event_ids()), org
                        assert count == len(ids) == SIZES["events"] + NEW, org
                        assert tenant.counters.responses_by_status[429] == 0, org
                    stop.set()
                    await worker
                    for org in orgs:
                        await fresh.get_workflow_handle(workflow_id(org)).terminate()
            finally:
                stop.set()
                await asyncio.gather(worker, return_exceptions=True)
