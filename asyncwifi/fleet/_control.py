"""Steering a fleet from outside: apply a ``fleet.toml``, read every organization's status.

:func:`apply_fleet` starts a workflow for each organization of the file that has none
running, keeps the running ones (their workflow id is the lock) and sends them the file's
settings (``configure``: a changed ``poll`` reaches them), and terminates those of
organizations no longer in the file. :func:`fleet_status` queries every running
organization's workflow and adds its run in progress, as its last heartbeat says (up to
0.8 x the heartbeat timeout old: the SDK sends no more often). Neither needs a secret: the
workflows carry organization ids. Both take a Temporal client: the command line's
``asyncwifi.cli._temporal.connect`` reaches a self-hosted server or Temporal Cloud.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from typing import Any

from temporalio.client import Client as TemporalClient
from temporalio.common import WorkflowIDConflictPolicy

from asyncwifi._defaults import FLEET_RUN, HEARTBEAT_TIMEOUT
from asyncwifi.fleet._config import FleetConfig
from asyncwifi.fleet._workflow import (
    WORKFLOW_NAME,
    OrganizationInput,
    OrganizationStatus,
    OrganizationWorkflow,
    PassResult,
    Settings,
    count_run,
    workflow_id,
)

__all__ = ["ApplyReport", "apply_fleet", "fleet_status", "running_organizations"]

#: real seconds a worker has to answer a workflow task before another gets it
WORKFLOW_TASK_TIMEOUT = 5.0
_PREFIX = workflow_id("")
_RUNNING = f"WorkflowType = '{WORKFLOW_NAME}' AND ExecutionStatus = 'Running'"


@dataclass
class ApplyReport:
    """What :func:`apply_fleet` did, by organization id."""

    started: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)


async def running_organizations(client: TemporalClient) -> set[str]:
    """The organizations whose workflow runs now."""
    found: set[str] = set()
    async for execution in client.list_workflows(_RUNNING):
        if execution.id.startswith(_PREFIX):
            found.add(execution.id[len(_PREFIX) :])
    return found


async def apply_fleet(
    client: TemporalClient,
    config: FleetConfig,
    *,
    task_queue: str,
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
    run_for: float = FLEET_RUN,
) -> ApplyReport:
    """Make the running workflows those of ``config`` (module docstring); ``run_for``: real
    seconds one activity runs an organization's sync (0: one pass an activity)."""
    if run_for < 0:
        raise ValueError(f"run_for must be 0 or more seconds, got {run_for!r}")
    report = ApplyReport()
    running = await running_organizations(client)
    for name, org in config.organizations.items():
        settings = Settings(poll=org.poll, heartbeat_timeout=heartbeat_timeout, run_for=run_for)
        if name in running:  # kept, with the file's settings now (a changed poll)
            await client.get_workflow_handle(workflow_id(name)).signal(
                OrganizationWorkflow.configure, settings
            )
            report.kept.append(name)
            continue
        await client.start_workflow(
            OrganizationWorkflow.run,
            OrganizationInput(
                name, poll=org.poll, heartbeat_timeout=heartbeat_timeout, run_for=run_for
            ),
            id=workflow_id(name),
            task_queue=task_queue,
            # a workflow started meanwhile (another apply) is the one kept: the id is the lock
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            # a workflow task taken by a frozen worker's open poll is handed on after this
            # (Temporal's default is 10 s); a task is a short replay of a small history
            task_timeout=timedelta(seconds=WORKFLOW_TASK_TIMEOUT),
        )
        report.started.append(name)
    for name in sorted(running - set(config.organizations)):
        await client.get_workflow_handle(workflow_id(name)).terminate(
            reason="removed from the fleet's configuration"
        )
        report.stopped.append(name)
    return report


async def fleet_status(client: TemporalClient) -> list[OrganizationStatus]:
    """Every running organization's status, sorted by organization: the runs ended (the
    workflow's query), then the run in progress (its activity's last heartbeat)."""
    names = sorted(await running_organizations(client))
    gate = asyncio.Semaphore(32)

    async def one(name: str) -> OrganizationStatus:
        async with gate:
            handle = client.get_workflow_handle(workflow_id(name))
            # the query first: a run that ends between the two is counted once, not twice
            status = await handle.query(OrganizationWorkflow.status)
            running = await _in_progress(client, await handle.describe())
            if running is not None:
                count_run(status, *running)
            return status

    return list(await asyncio.gather(*(one(n) for n in names)))


async def _in_progress(client: TemporalClient, described: Any) -> tuple[PassResult, str] | None:
    """The counts of the sync activity in progress and when it said them, as its last
    heartbeat did (None: no run in progress, or none said yet)."""
    for pending in described.raw_description.pending_activities:
        payloads = pending.heartbeat_details.payloads
        if not payloads:
            continue
        try:
            (said,) = await client.data_converter.decode(payloads, [PassResult])
        except Exception:  # a heartbeat of another shape (an older worker's): not counted
            continue
        if isinstance(said, PassResult):
            at = pending.last_heartbeat_time.ToDatetime(tzinfo=UTC)
            return said, at.isoformat(timespec="seconds").replace("+00:00", "Z")
    return None
