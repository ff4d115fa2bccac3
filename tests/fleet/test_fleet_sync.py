"""The fleet for real: the multi-organization simulator, a real Temporal dev server, real
databases. Two workers and 20 organizations in PostgreSQL: every organization's events,
contacts, hotspots and segments exactly once, no 429 for any key, and no secret or token in
any workflow history or log line. One revoked key: its status says so and it backs off,
the others are unaffected. A stale pass (another took the organization's lease) writes
nothing."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from asyncwifi import ScaledClock
from asyncwifi.engine import open_destination
from asyncwifi.fleet._config import FleetConfig, parse_fleet_config
from asyncwifi.fleet._control import apply_fleet, fleet_status
from asyncwifi.fleet._worker import WorkerOptions, run_worker
from asyncwifi.fleet._workflow import OrganizationStatus, workflow_id
from asyncwifi.testing import Simulator
from tests.sync.conftest import pg_database, pg_lock, require_postgres

SIZES = {"events": 300, "contacts": 30, "hotspots": 4, "segments": 3}


def config_of(sim: Simulator, **fleet: Any) -> FleetConfig:
    fleet = {"base_url": sim.base_url, "allow_http": True, "since": "2024-01-01",
             "poll": 3600, **fleet}  # fmt: skip
    entries = [
        {"organization": o, "client_key": k, "client_secret": s}
        for o, k, s in sim.organizations  # type: ignore[attr-defined]
    ]
    return parse_fleet_config({"fleet": fleet, "organizations": entries})


@asynccontextmanager
async def workers(
    temporal: Any, config: FleetConfig, url: str, task_queue: str, clock: Any, n: int = 1
) -> AsyncIterator[None]:
    """``n`` workers in this process, each on a Temporal connection of its own (the SDK
    allows one worker per connection and task queue)."""
    from temporalio.client import Client

    target = temporal.service_client.config.target_host
    stop = asyncio.Event()
    tasks = []
    for i in range(n):
        client = temporal if i == 0 else await Client.connect(target)
        options = WorkerOptions(
            task_queue=task_queue, clock=clock, identity=f"worker-{i}", graceful_stop=2.0
        )
        tasks.append(
            asyncio.create_task(run_worker(client, config, url, stop=stop, options=options))
        )
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def statuses(temporal: Any, config: FleetConfig) -> dict[str, OrganizationStatus]:
    return {
        s.organization: s
        for s in await fleet_status(temporal)
        if s.organization in config.organizations
    }


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 50.0) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.2)


async def stored(url: str, organization: str, table: str) -> tuple[set[str], int]:
    view = open_destination(url, organization=organization)  # type: ignore[call-arg]
    await view.open()
    try:
        return await view.ids(table), await view.count(table)
    finally:
        await view.close()


async def events_stored(url: str, orgs: Any, count: int = SIZES["events"]) -> bool:
    """Whether every one of ``orgs`` has ``count`` events stored: a run reads its events
    while it refreshes the rest, so a pass ended does not say its events are in."""
    return all([(await stored(url, org, "events"))[1] == count for org in orgs])


async def histories(temporal: Any, config: FleetConfig) -> str:
    """Every run's history of every organization's workflow, as JSON."""
    text = []
    for org in config.organizations:
        async for run in temporal.list_workflows(f"WorkflowId = '{workflow_id(org)}'"):
            handle = temporal.get_workflow_handle(run.id, run_id=run.run_id)
            text.append((await handle.fetch_history()).to_json())
    return "\n".join(text)


# the flat records, with no time at all (observed.md): the nested ones (time in ``when``,
# the simulator's default) go through every other fleet test, takeovers included
async def test_two_workers_twenty_organizations_every_row_once(
    temporal: Any,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_postgres()
    caplog.set_level(logging.DEBUG)
    clock = ScaledClock(20.0)
    with pg_lock(exclusive=False):
        async with (
            pg_database() as url,
            Simulator(organizations=20, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                      fractional_reset=True, event_shape="flat", **SIZES) as sim,
        ):  # fmt: skip
            config = config_of(sim)
            tokens = record_tokens(monkeypatch)
            async with workers(temporal, config, url, task_queue, clock, n=2):
                await apply_fleet(temporal, config, task_queue=task_queue)

                async def all_done() -> bool:
                    found = await statuses(temporal, config)
                    return (
                        len(found) == 20
                        and all(s.passes >= 1 and s.failure is None for s in found.values())
                        and await events_stored(url, found)
                    )

                await until(all_done)
                found = await statuses(temporal, config)
                for org, _key, _secret in sim.organizations:  # type: ignore[attr-defined]
                    tenant = sim.tenant(org)  # type: ignore[attr-defined]
                    data = tenant.data
                    ids, count = await stored(url, org, "events")
                    assert ids == set(data.event_ids()), org
                    assert count == len(data.event_ids()) == SIZES["events"]
                    ids, count = await stored(url, org, "contacts")
                    assert ids == {c["cid"] for c in data.contacts}
                    assert count == len(ids)
                    live = {h["id"] for h in data.hotspots.values() if not h["deleted"]}
                    assert (await stored(url, org, "hotspots"))[0] == live
                    assert (await stored(url, org, "segments"))[0] == {
                        s["id"] for s in data.segments
                    }
                    assert tenant.counters.responses_by_status[429] == 0, org
                    assert found[org].requests_today
                scanned = await histories(temporal, config)
            assert scanned
            logs = caplog.text
            for _org, key, secret in sim.organizations:  # type: ignore[attr-defined]
                for shown in (scanned, logs):
                    assert secret not in shown
                    assert key not in shown  # not even the key enters Temporal
            assert len(tokens) >= 20  # every organization logged in
            for token in tokens:
                for shown in (scanned, logs):
                    assert token not in shown
                    assert token.rsplit(".", 1)[-1] not in shown  # not even its signature
            for org in config.organizations:
                await temporal.get_workflow_handle(workflow_id(org)).terminate()


def record_tokens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every token the simulator issues from now on, whole (a test's own spy)."""
    from asyncwifi.testing._auth import TokenAuthority

    issued: list[str] = []
    issue = TokenAuthority.issue

    def spy(self: TokenAuthority, now: float) -> str:
        token = issue(self, now)
        issued.append(token)
        return token

    monkeypatch.setattr(TokenAuthority, "issue", spy)
    return issued


async def test_a_revoked_key_says_so_and_backs_off_the_others_unaffected(
    temporal: Any, task_queue: str, tmp_path: Path
) -> None:
    clock = ScaledClock(20.0)
    async with Simulator(organizations=3, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                         fractional_reset=True, **SIZES) as sim:  # fmt: skip
        config = config_of(sim, poll=1)
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        revoked = sim.organizations[1].organization  # type: ignore[attr-defined]
        sim.revoke_key(revoked)  # type: ignore[attr-defined]
        async with workers(temporal, config, url, task_queue, clock):
            await apply_fleet(temporal, config, task_queue=task_queue)

            async def settled() -> bool:
                found = await statuses(temporal, config)
                return (
                    len(found) == 3
                    and found[revoked].failures >= 2
                    and all(s.passes >= 1 for o, s in found.items() if o != revoked)
                    and await events_stored(url, [o for o in found if o != revoked])
                )

            await until(settled)
            found = await statuses(temporal, config)
            bad = found[revoked]
            assert bad.failure == "unauthorized"
            assert bad.last_success is None
            logins = sim.tenant(revoked).counters.login_failures  # type: ignore[attr-defined]
            assert logins <= 6  # backoff (1 s, 2 s, ...), not a hot loop
            for org, status in found.items():
                if org != revoked:
                    assert status.failure is None
                    assert (await stored(url, org, "events"))[1] == SIZES["events"]
            assert (await stored(url, revoked, "events"))[1] == 0
        for org in config.organizations:
            await temporal.get_workflow_handle(workflow_id(org)).terminate()


async def test_one_run_follows_new_events_without_another_activity(
    temporal: Any, task_queue: str, tmp_path: Path
) -> None:
    """The activity runs the daemon's loop: new events are stored by the run in progress
    (no second activity, no history event per poll), and ``fleet status`` says its passes
    and its newest event from the run's heartbeat."""
    clock = ScaledClock(20.0)
    async with Simulator(organizations=1, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                         fractional_reset=True, **SIZES) as sim:  # fmt: skip
        # a poll every 3 real seconds; events added now (whole seconds) read once settled
        config = config_of(sim, poll=60, settle=5)
        (org,) = config.organizations
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        handle = temporal.get_workflow_handle(workflow_id(org))
        try:
            async with workers(temporal, config, url, task_queue, clock):
                await apply_fleet(temporal, config, task_queue=task_queue, heartbeat_timeout=3)
                await until(lambda: events_stored(url, [org]))
                before = (await statuses(temporal, config))[org]
                sim.tenant(org).add_events(7)  # type: ignore[attr-defined]
                await until(lambda: events_stored(url, [org], SIZES["events"] + 7), 30)

                async def said() -> bool:  # the heartbeat after the new events' write
                    status = (await statuses(temporal, config))[org]
                    return status.rows >= before.rows + 7

                await until(said, 20)
                status = (await statuses(temporal, config))[org]
                history = await handle.fetch_history()
                scheduled = "activity_task_scheduled_event_attributes"
                runs = [e for e in history.events if e.HasField(scheduled)]
                assert len(runs) == 1  # every poll inside the one run
                assert len(history.events) < 12, len(history.events)
                assert status.state == "ok"
                assert status.passes >= 1
                assert status.newest_event is not None
                assert status.newest_event >= (before.newest_event or "")
                ids, count = await stored(url, org, "events")
                assert ids == set(sim.tenant(org).data.event_ids())  # type: ignore[attr-defined]
                assert count == len(ids)
                assert sim.tenant(org).counters.responses_by_status[429] == 0  # type: ignore[attr-defined]
        finally:
            await handle.terminate()
