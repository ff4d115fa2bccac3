"""A fleet worker: the organizations' workflows and their runs, on one task queue.

Start as many as needed, on as many machines: Temporal hands each organization's workflow
and run to one of them at a time, and another takes over a worker that dies (its run's
heartbeats stop). A run stays on its worker until it ends (``run_for``): a worker started
later takes organizations over as their runs end. A worker opens its database once and
serves every organization through views of it, with one client per organization over one
connection pool per base URL. ``stop`` (SIGINT, SIGTERM in the command) ends it
gracefully: no new work is taken, the runs in progress end between transactions, say what
they did, and the next runs go to another worker.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client as TemporalClient
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from asyncwifi._clock import Clock
from asyncwifi._defaults import IDLE_TRANSACTION_TIMEOUT
from asyncwifi.fleet._activities import PassActivities, fleet_database_url
from asyncwifi.fleet._clients import ClientPool
from asyncwifi.fleet._config import FleetConfig
from asyncwifi.fleet._workflow import OrganizationWorkflow

__all__ = ["TASK_QUEUE", "WorkerOptions", "run_worker", "workflow_runner"]

#: the task queue of the fleet's workflows and passes (``--task-queue`` changes it)
TASK_QUEUE = "asyncwifi-fleet"


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker runs (none of it is stored in Temporal)."""

    task_queue: str = TASK_QUEUE
    #: ``redis://...``: every key's limits shared with its other users
    rate_store: str | None = None
    #: the clients' clock (a test's :class:`~asyncwifi.ScaledClock`)
    clock: Clock | None = None
    #: the name this worker goes by in Temporal and in the leases it takes
    identity: str | None = None
    #: real seconds the runs in progress get before they are cancelled when the worker
    #: stops (0: at once; a cancelled run ends between transactions within 2 s, else drops
    #: its batch in hand: the checkpoint is the truth, and the next run goes elsewhere)
    graceful_stop: float = 0.0
    #: real seconds a pass waits for an unreachable database before its workflow waits
    store_patience: float = 60.0
    #: PostgreSQL aborts a transaction left idle this long (a frozen worker's), freeing
    #: its locks; None: the server's setting
    idle_transaction_timeout: float | None = IDLE_TRANSACTION_TIMEOUT
    #: the most PostgreSQL connections the worker opens, all organizations together (a
    #: database server's are few: 100 by default)
    max_db_connections: int = 20


def workflow_runner() -> UnsandboxedWorkflowRunner:
    """The workflow runs outside Temporal's sandbox: the sandbox proxies the workflow's
    modules at every activation, two a pass and organization (about 7 % of a worker's event
    loop in cProfile: ``docs/benchmarks.md``, Fleet), and guards against what this workflow
    does not do: its module imports only ``temporalio`` and the standard library, keeps no
    global state and reads time as ``workflow.now()``; the tests run it in the default
    sandbox too, so a change that breaks determinism is caught there."""
    return UnsandboxedWorkflowRunner()


async def run_worker(
    client: TemporalClient,
    config: FleetConfig,
    database_url: str,
    *,
    options: WorkerOptions | None = None,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[PassActivities], None] | None = None,
) -> None:
    """Serve ``config``'s organizations until ``stop`` is set (module docstring)."""
    from asyncwifi.engine import open_destination

    opts = options or WorkerOptions()
    identity = opts.identity or f"{socket.gethostname()}:{os.getpid()}"
    destination = open_destination(
        fleet_database_url(database_url, opts.idle_transaction_timeout),
        max_connections=opts.max_db_connections,
    )
    clients = ClientPool(rate_store=opts.rate_store, clock=opts.clock)
    activities = PassActivities(
        config,
        destination,
        clients,
        database_url=database_url,
        identity=identity,
        store_patience=opts.store_patience,
    )
    worker = Worker(
        client,
        task_queue=opts.task_queue,
        workflows=[OrganizationWorkflow],
        activities=[activities.sync_pass],
        workflow_runner=workflow_runner(),
        identity=identity,
        # a run mostly waits on its key's limits: every organization may have one running
        max_concurrent_activities=max(10, len(config)),
        # every organization's workflow stays cached (about 0.1 MB each, benchmarks/fleet.py):
        # an evicted one is replayed from its history at its next pass, which costs CPU
        max_cached_workflows=max(1000, len(config)),
        graceful_shutdown_timeout=timedelta(seconds=opts.graceful_stop),
        # a workflow cached on a worker that died moves to another after this, not 10 s
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=2),
    )
    stopped = stop or asyncio.Event()
    try:
        async with worker:
            if on_ready is not None:
                on_ready(activities)
            await stopped.wait()
    finally:
        try:
            await clients.aclose()
        finally:
            await destination.close()
