"""A stale pass cannot write: once another attempt took the organization's lease (Temporal
gave the pass to another worker), the stale attempt's next commit is refused, nothing of
its batch is stored, and the attempt ends as a non-retryable ``LeaseLostError``. A database
from before organizations ends the pass with what to run, before any request."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from asyncwifi import ScaledClock
from asyncwifi.engine import open_destination
from asyncwifi.fleet._activities import PassActivities
from asyncwifi.fleet._clients import ClientPool
from asyncwifi.fleet._workflow import PassRequest
from asyncwifi.testing import Simulator
from tests.fleet.test_fleet_sync import SIZES, config_of


async def test_a_stale_pass_commits_nothing(tmp_path: Path) -> None:
    clock = ScaledClock(20.0)
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    async with Simulator(organizations=1, seed=random.randrange(1 << 30), clock=clock,  # type: ignore[call-arg]
                         fractional_reset=True, **SIZES) as sim:  # fmt: skip
        config = config_of(sim)
        org = next(iter(config.organizations))
        destination = open_destination(url)
        clients = ClientPool(clock=clock)
        activities = PassActivities(config, destination, clients)
        views: list[Any] = []
        make_view = destination.for_organization  # type: ignore[attr-defined]

        def for_organization(organization: str) -> Any:
            view = make_view(organization)
            write = view.write

            async def usurped(*args: Any, **kwargs: Any) -> int:
                # another worker took the organization over before this commit
                await make_view(organization).take_lease("the other worker")
                return int(await write(*args, **kwargs))

            view.write = usurped
            views.append(view)
            return view

        destination.for_organization = for_organization  # type: ignore[attr-defined]
        try:
            with pytest.raises(ApplicationError) as caught:
                await ActivityEnvironment().run(activities.sync_pass, PassRequest(org))
            assert caught.value.type == "LeaseLostError"
            assert caught.value.non_retryable
            # the type said once: "LeaseLostError: the sync lease ... was taken over"
            assert str(caught.value).startswith("LeaseLostError: the sync lease of")
            assert sim.organizations[0].client_secret not in str(caught.value)  # type: ignore[attr-defined]
            assert len(views) == 1
            checker = make_view(org)
            for table in ("events", "contacts", "hotspots", "segments"):
                assert await checker.count(table) == 0, table
            assert await checker.checkpoint("events") is None
        finally:
            await clients.aclose()
            await destination.close()


async def test_a_database_from_before_organizations_says_what_to_run(tmp_path: Path) -> None:
    import sqlite3

    from asyncwifi.engine._schema import STEPS

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # version 1, holding one organization's checkpoint
        for sql in STEPS[0]("sqlite", ""):
            conn.execute(sql)
        conn.execute(
            "INSERT INTO sync_checkpoints (name, value, updated_at) "
            "VALUES ('events', '{}', '2024-01-01T00:00:00Z')"
        )
        conn.execute("PRAGMA user_version = 1")
    clock = ScaledClock(20.0)
    async with Simulator(organizations=1, clock=clock, **SIZES) as sim:  # type: ignore[call-arg]
        config = config_of(sim)
        destination = open_destination(f"sqlite:///{path}")
        clients = ClientPool(clock=clock)
        activities = PassActivities(config, destination, clients)
        try:
            with pytest.raises(ApplicationError) as caught:
                await ActivityEnvironment().run(
                    activities.sync_pass, PassRequest(next(iter(config.organizations)))
                )
        finally:
            await clients.aclose()
            await destination.close()
    assert caught.value.non_retryable
    assert "asyncwifi sync --once --to URL" in str(caught.value)
    assert sim.counters.requests == 0  # nothing spent on data it cannot store
