"""``asyncwifi sync``: keep a database in step with the platform (see docs/guides/sync.md).

``--to sqlite:///PATH`` or ``--to postgresql://...``; ``--once`` for one pass (exit 0),
otherwise a daemon that follows new events and refreshes the rest until SIGTERM/SIGINT,
stopping between transactions. ``--until`` is exclusive, as in ``events backfill``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import click

from asyncwifi._instant import MS
from asyncwifi.backfill._plan import parse_duration, parse_instant
from asyncwifi.cli._app import App, output_options, pass_app, run_async
from asyncwifi.cli._config import rate_store_option
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._progress import counted

if TYPE_CHECKING:
    from asyncwifi.sync import Syncer

__all__ = ["sync_command"]


def _instant(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_instant(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _seconds(ctx: click.Context, param: click.Parameter, value: str) -> float:
    if value.strip() == "0":
        return 0.0
    try:
        return parse_duration(value).total_seconds()
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _lookback(ctx: click.Context, param: click.Parameter, value: str) -> float:
    from asyncwifi.sync._lookback import lookback_of

    try:
        return lookback_of(_seconds(ctx, param, value))
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("sync")
@click.option("--to", "url", required=True, help="sqlite:///PATH or postgresql://USER@HOST/DB.")
@click.option(
    "--since", callback=_instant, help="First run only: start of events (default 7 d ago)."
)
@click.option("--until", callback=_instant, help="Stop events here (exclusive; default: follow).")
@click.option("--once", is_flag=True, help="One pass over every resource, then exit 0.")
@click.option(
    "--budget",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=1.0,
    show_default=True,
    help="Share of the day's quota this sync may use (the rest is left to other users).",
)
@rate_store_option("Share the key's quota and this budget with its other users, in Redis "
                   "(every process of the key uses the same).")  # fmt: skip
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve /metrics (Prometheus) and /healthz on this port.")  # fmt: skip
@click.option("--poll", default="1m", callback=_seconds, show_default=True,
              help="Daemon: between polls for new events.")  # fmt: skip
@click.option("--lookback", default="10m", callback=_lookback, show_default=True,
              help="Store events that appear up to this long after their own time: the "
              "recent past is re-read (0: off; at most 1d).")  # fmt: skip
@click.option("--refresh-every", default="15m", callback=_seconds, show_default=True,
              help="Daemon: between refreshes of contacts, hotspots and segments.")  # fmt: skip
@click.option("--reconcile-every", default="1d", callback=_seconds, show_default=True,
              help="Between full contact scans (they find deletes; 0: every pass).")  # fmt: skip
@click.option("--modified-from-param", default="modifiedFrom", show_default=True,
              help="Query name of the contacts' modified >= filter (not in the docs).")  # fmt: skip
@click.option("--modified-to-param", default="modifiedTo", show_default=True,
              help="Query name of the contacts' modified <= filter.")  # fmt: skip
@output_options
@pass_app
def sync_command(
    app: App,
    url: str,
    since: datetime | None,
    until: datetime | None,
    once: bool,
    budget: float,
    rate_store: str | None,
    metrics_port: int | None,
    poll: float,
    lookback: float,
    refresh_every: float,
    reconcile_every: float,
    modified_from_param: str,
    modified_to_param: str,
) -> None:
    """Keep a database in sync: contacts, events, hotspots and segments, exactly once.

    Every batch is written with its checkpoint in one transaction: kill it at any moment
    and run it again, nothing is lost or doubled. Without --once it runs until SIGTERM.
    """
    from asyncwifi.sync import Budget, Syncer, SyncOptions, open_destination
    from asyncwifi.sync._options import FIRST_RUN

    if since is not None and until is not None and since >= until:
        raise click.UsageError("--since must be before --until")
    if poll <= 0 or refresh_every <= 0:
        raise click.UsageError("--poll and --refresh-every must be positive")
    app.check_credentials()
    open_destination(url)  # a wrong URL is refused before anything starts

    async def go() -> None:
        sim_since = since
        if app.sim.enabled and sim_since is None and until is not None:
            sim_since = until - FIRST_RUN
        # "raise": the sync itself says the quota is spent, sleeps, and resumes from its
        # checkpoints (instead of a silent wait inside one request)
        async with app.client(
            since=sim_since, until=until, on_exhausted="raise", rate_store=rate_store
        ) as api:
            # the client's organization's rows (a database of before organizations: its
            # rows become this organization's)
            destination = open_destination(url, organization=api.organization)
            options = SyncOptions(
                since=since,
                until=None if until is None else until - MS,
                poll_interval=poll,
                lookback=lookback,
                refresh_every=refresh_every,
                reconcile_every=reconcile_every,
                modified_from=modified_from_param,
                modified_to=modified_to_param,
            )
            # the limiter's own counts (every process's on the key with --rate-store); a
            # client without a day's quota (lifted, as the benchmark does) has none to share
            day = api.scheduler.limits.day
            shared = Budget(api.scheduler, budget) if day is not None else None
            metrics = None
            syncer = Syncer(api, destination, options=options, budget=shared)
            if metrics_port is not None:
                from asyncwifi.sync._metrics import SyncMetrics

                metrics = SyncMetrics(api, syncer)
                port = await metrics.start(metrics_port)
                app.display.info(
                    "metrics", f"metrics on http://127.0.0.1:{port}/metrics", port=port
                )
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(signum, _stopper(app, syncer))
            try:
                if once:
                    await syncer.run_once()
                    _report(app, syncer, "stopped" if syncer.stopping else "pass done")
                else:
                    app.display.info("sync", f"syncing into {destination!r}; SIGTERM to stop")
                    await syncer.run_forever()
                    _report(app, syncer, "stopped")
            finally:
                await syncer.drain()
                await destination.close()
                if metrics is not None:
                    await metrics.stop()

    try:
        run_async(go())
    except CliFailure:
        raise
    except Exception as exc:
        from asyncwifi.sync import DestinationUnavailableError

        if isinstance(exc, DestinationUnavailableError):
            raise CliFailure(str(exc), ExitCode.FAILURE) from None
        raise


def _stopper(app: App, syncer: Syncer) -> Callable[[], None]:
    def stop() -> None:
        app.display.info("sync", "stopping after the transaction in progress")
        syncer.stop()

    return stop


def _report(app: App, syncer: Syncer, what: str) -> None:
    stats = syncer.stats
    rows = ", ".join(f"{t} {n:,}" for t, n in sorted(stats.rows.items())) or "nothing"
    requests = sum(stats.requests.values())
    late = sum(stats.late_events.values())
    app.display.info(
        "sync",
        f"sync {what}: rows changed: {rows}; {requests:,} requests "
        f"({stats.lookback_requests:,} re-reading the recent past); "
        f"{counted(late, 'late event')} stored; {counted(stats.dead_letters, 'dead letter')}",
        rows=stats.rows,
        requests=stats.requests,
        lookback_requests=stats.lookback_requests,
        late_events=stats.late_events,
        dead_letters=stats.dead_letters,
    )
