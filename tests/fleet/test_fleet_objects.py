"""The fleet's objects (spec §8), with a real Temporal dev server: each organization's client
spends against the allowance its fleet.toml gives, and its sync gets the share of it to plan
with; a pass reports the limiter's month count and the sync plan's projection, plain numbers;
``asyncwifi fleet status`` (text and ``--format json``) shows them per organization; an
organization whose allowance is spent waits for the 1st, saying so; the worker's metrics
(``--metrics-port``) carry them; no key or secret enters any workflow history."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
import time
from typing import Any, ClassVar

import aiohttp
import pytest

pytest.importorskip("temporalio")

from asyncwifi import ScaledClock
from asyncwifi._instant import period_end, read_instant
from asyncwifi.cli._command import run
from asyncwifi.cli._temporal import connect
from asyncwifi.fleet._activities import PassActivities
from asyncwifi.fleet._config import FleetConfig, parse_fleet_config
from asyncwifi.fleet._control import apply_fleet
from asyncwifi.fleet._worker import WorkerOptions, run_worker
from asyncwifi.fleet._workflow import workflow_id
from asyncwifi.sync import Syncer
from asyncwifi.testing import Simulator
from tests.fleet.conftest import free_port
from tests.fleet.test_fleet_sync import SIZES, statuses, until

#: what the sync's plan projects in this test (the sync sets it; the fleet only reports it)


class _PlannedSyncer(Syncer):
    """A sync that records the share of the allowance it was given and the projection of
    its object plan."""

    shares: ClassVar[dict[str, float]] = {}
    projections: ClassVar[dict[str, int | None]] = {}

    async def make_plan(self) -> Any:
        org = self.api.organization or ""
        _PlannedSyncer.shares[org] = self.options.object_share
        plan = await super().make_plan()
        _PlannedSyncer.projections[org] = self.stats.projection
        return plan


async def decoded_histories(temporal: Any, config: FleetConfig) -> str:
    """Every run's history of every organization's workflow, as JSON, and every payload in
    it decoded (Temporal's JSON shows payload data in base64)."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                if name == "data" and isinstance(value, str):
                    found.append(base64.b64decode(value).decode(errors="replace"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for org in config.organizations:
        async for one in temporal.list_workflows(f"WorkflowId = '{workflow_id(org)}'"):
            handle = temporal.get_workflow_handle(one.id, run_id=one.run_id)
            text = (await handle.fetch_history()).to_json()
            found.append(text)
            walk(json.loads(text))
    return "\n".join(found)


def _metric(text: str, name: str, organization: str) -> float:
    pattern = rf'^{name}\{{[^}}]*organization="{re.escape(organization)}"[^}}]*\}} (\S+)$'
    match = re.search(pattern, text, re.MULTILINE)
    assert match is not None, f"{name} of {organization} not on /metrics:\n{text[-2000:]}"
    return float(match.group(1))


async def test_objects_projection_and_a_spent_allowance_in_status_and_metrics(
    temporal: Any,
    task_queue: str,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("asyncwifi.fleet._activities.Syncer", _PlannedSyncer)
    clock = ScaledClock(20.0)
    async with Simulator(organizations=2, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                         fractional_reset=True, **SIZES) as sim:  # fmt: skip
        (roomy, key_a, secret_a), (tight, key_b, secret_b) = sim.organizations  # type: ignore[attr-defined]
        config = parse_fleet_config(
            {
                "fleet": {
                    "base_url": sim.base_url,
                    "allow_http": True,
                    "since": "2024-01-01",
                    "poll": 3600,
                    "allowance": "10 access points",
                },
                "organizations": [
                    {"organization": roomy, "client_key": key_a, "client_secret": secret_a},
                    {
                        "organization": tight,
                        "client_key": key_b,
                        "client_secret": secret_b,
                        "allowance": 100,
                        "object_share": 0.5,
                    },
                ],
            }
        )
        target = temporal.service_client.config.target_host
        port = free_port()
        worker_client = await connect(target, metrics_port=port)
        ready: list[PassActivities] = []
        stop = asyncio.Event()
        options = WorkerOptions(task_queue=task_queue, clock=clock, identity="objects-worker")
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        worker = asyncio.create_task(
            run_worker(
                worker_client, config, url, options=options, stop=stop, on_ready=ready.append
            )
        )
        try:
            # a run heartbeats its counts (fleet status reads them) at most every 0.8 x 3 s
            await apply_fleet(temporal, config, task_queue=task_queue, heartbeat_timeout=3)
            counted: dict[str, int] = {}

            async def told() -> bool:
                found = await statuses(temporal, config)
                if not ready:
                    return False
                for org in (roomy, tight):
                    scheduler = ready[0].clients.client(config[org]).scheduler
                    counted[org] = sum((await scheduler.objects()).values())
                return (
                    len(found) == 2
                    and found[roomy].passes >= 1
                    and found[roomy].failure is None
                    and found[roomy].objects_month == counted[roomy] >= sum(SIZES.values())
                    and found[tight].failure == "quota"
                )

            # the roomy one's run reads its events while it refreshes the rest: its status
            # counts every object once its run has read them and said so
            await until(told)
            found = await statuses(temporal, config)

            # the organization with room: every record once at least, as the limiter counts
            ok = found[roomy]
            assert ok.objects_month == counted[roomy] >= sum(SIZES.values())
            assert ok.objects_allowance == 20_000
            assert ok.projection == _PlannedSyncer.projections[roomy] is not None
            # the one whose allowance ran out: a quota wait until the 1st, said so
            spent = found[tight]
            assert spent.last_error == "the month's object allowance is spent"
            assert spent.objects_allowance == 100
            assert spent.objects_month == counted[tight] >= 100  # a page in flight lands
            assert spent.next_pass is not None
            month_end = period_end(clock.now(), "month")
            expected = time.time() + clock.real(month_end - clock.now())
            assert abs(read_instant(spent.next_pass).timestamp() - expected) < 5
            assert _PlannedSyncer.shares == {roomy: 0.9, tight: 0.5}

            code = await asyncio.to_thread(run, ["fleet", "status", "--temporal", target])
            text = capsys.readouterr().out
            assert code == 0
            lines = {line.split("  ")[0]: line for line in text.splitlines()}
            assert (
                f"objects this month {counted[roomy]:,} of 20,000  "
                f"projection {ok.projection:,}/month" in lines[roomy]
            )
            assert f"objects this month {counted[tight]:,} of 100  " in lines[tight]
            assert "failing (quota)" in lines[tight]

            code = await asyncio.to_thread(
                run, ["fleet", "status", "--temporal", target, "--format", "json"]
            )
            assert code == 0
            shown = {s["organization"]: s for s in json.loads(capsys.readouterr().out)}
            assert shown[roomy]["objects_month"] == counted[roomy]
            assert shown[roomy]["objects_allowance"] == 20_000
            assert shown[roomy]["projection"] == ok.projection
            assert shown[tight]["failure"] == "quota"

            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{port}/metrics") as resp,
            ):
                metrics = await resp.text()
            assert _metric(metrics, "asyncwifi_fleet_objects_month", roomy) == counted[roomy]
            assert _metric(metrics, "asyncwifi_fleet_objects_projection", roomy) == ok.projection

            scanned = await decoded_histories(temporal, config)
            assert '"objects_month":' in scanned  # the counts are there, plain numbers
            for _org, key, secret in sim.organizations:  # type: ignore[attr-defined]
                assert secret not in scanned
                assert key not in scanned
        finally:
            stop.set()
            await worker
            for org in config.organizations:
                await temporal.get_workflow_handle(workflow_id(org)).terminate()
