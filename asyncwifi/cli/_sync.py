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
from asyncwifi.cli._sync_start import claim_lease, open_at_start

if TYPE_CHECKING:
    from asyncwifi.sync import Syncer
    from asyncwifi.sync._plan import SyncPlan

__all__ = ["sync_command"]


def _instant(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_instant(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _seconds(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None  # left to the sync's object plan
    if value.strip() == "0":
        return 0.0
    try:
        return parse_duration(value).total_seconds()
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _lookback(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    from asyncwifi.sync._lookback import lookback_of

    seconds = _seconds(ctx, param, value)
    if seconds is None:
        return None
    try:
        return lookback_of(seconds)
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
@click.option("--object-share", type=click.FloatRange(0.0, 1.0, min_open=True), default=0.9,
              show_default=True,
              help="Share of the month's object allowance (--allowance) this sync plans to "
              "spend: it chooses the cadences below to stay inside it.")  # fmt: skip
@click.option("--poll", default=None, callback=_seconds,
              help="Daemon: between polls for new events [default: 1m].")  # fmt: skip
@click.option("--lookback", default=None, callback=_lookback,
              help="Store events that appear up to this long after their own time: each "
              "span is read once more this much later (0: off; at most 1d) "
              "[default: 10m].")  # fmt: skip
@click.option("--settle", default=None, callback=_seconds,
              help="Read events once they are this old [default: 1m, or the lookback when "
              "the object plan reads each event once].")  # fmt: skip
@click.option("--refresh-every", default=None, callback=_seconds,
              help="Between reads of changed contacts and hotspots, and of segments "
              "[default: the object plan's].")  # fmt: skip
@click.option("--reconcile-every", default=None, callback=_seconds,
              help="Between full reads of contacts and hotspots (they find deletes; 0: every "
              "pass) [default: the object plan's].")  # fmt: skip
@click.option("--modified-from-param", default="modifiedFrom", show_default=True,
              help="Query name of the contacts' modified >= filter (not in the docs).")  # fmt: skip
@click.option("--modified-to-param", default="modifiedTo", show_default=True,
              help="Query name of the contacts' modified <= filter.")  # fmt: skip
@click.option("--wait-for-lease", is_flag=True,
              help="Another sync of the organization holds this database: wait for it to "
              "end (default: exit 75 naming it).")  # fmt: skip
@click.option("--lease-ttl", type=click.FloatRange(0.1), default=60.0, hidden=True)
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
    object_share: float,
    poll: float | None,
    lookback: float | None,
    settle: float | None,
    refresh_every: float | None,
    reconcile_every: float | None,
    modified_from_param: str,
    modified_to_param: str,
    wait_for_lease: bool,
    lease_ttl: float,
) -> None:
    """Keep a database in sync: contacts, events, hotspots and segments, exactly once.

    Every batch is written with its checkpoint in one transaction: kill it at any moment
    and run it again, nothing is lost or doubled. Without --once it runs until SIGTERM.
    """
    from asyncwifi.sync import Budget, Syncer, SyncOptions, open_destination
    from asyncwifi.sync._lookback import DEFAULT_LOOKBACK
    from asyncwifi.sync._options import FIRST_RUN

    if since is not None and until is not None and since >= until:
        raise click.UsageError("--since must be before --until")
    if poll == 0 or refresh_every == 0:
        raise click.UsageError("--poll and --refresh-every must be positive")
    app.check_credentials()
    open_destination(url)  # a wrong URL (or a missing driver) is refused before anything
    if metrics_port is not None:
        from asyncwifi._extras import require

        require("prometheus_client", "sync", "--metrics-port")

    started = False  # the sync's own stop (between transactions) is in place

    async def go() -> None:
        try:
            await sync()
        except asyncio.CancelledError:
            if started:
                raise
            # stopped while it got ready (the simulator's data, the login, the database):
            # nothing was written, and a stop is how a sync ends
            app.display.info("sync", "sync stopped before its first pass: nothing written")

    async def sync() -> None:
        nonlocal started
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
            await open_at_start(destination, url)
            keeper = await claim_lease(app, destination, url, wait_for_lease, lease_ttl)
            options = SyncOptions(
                since=since,
                until=None if until is None else until - MS,
                poll_interval=poll,
                lookback=DEFAULT_LOOKBACK if lookback is None else lookback,
                settle=settle,
                refresh_every=refresh_every,
                reconcile_every=reconcile_every,
                object_share=object_share,
                modified_from=modified_from_param,
                modified_to=modified_to_param,
            )
            # the limiter's own counts (every process's on the key with --rate-store); a
            # client without a day's quota (lifted, as the benchmark does) has none to share
            day = api.scheduler.limits.day
            shared = Budget(api.scheduler, budget) if day is not None else None
            metrics = None
            syncer = Syncer(
                api, destination, options=options, budget=shared,
                on_plan=lambda plan: _say_plan(app, plan),
                on_pass=lambda stats: _report(app, syncer, f"pass {stats.passes} done"),
            )  # fmt: skip
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
            started = True
            keeping = asyncio.create_task(keeper.keep(lambda lost: syncer.stop()))
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
                keeping.cancel()
                await asyncio.gather(keeping, return_exceptions=True)
                await keeper.release()
                await destination.close()
                if metrics is not None:
                    await metrics.stop()
            if keeper.lost is not None:
                raise CliFailure(f"{keeper.lost}; this sync stopped", ExitCode.TEMPFAIL)

    try:
        run_async(go())
    except CliFailure:
        raise
    except Exception as exc:
        from asyncwifi.sync import DestinationUnavailableError

        if isinstance(exc, DestinationUnavailableError):
            raise CliFailure(str(exc), ExitCode.FAILURE) from None
        raise


def _say_plan(app: App, plan: SyncPlan) -> None:
    """The sync's object plan, as it is made: what it chose and what that costs."""
    lines = plan.describe()
    app.display.info("plan", "\n".join(lines), projection=plan.projection, share=plan.share,
                     costs=dict(plan.costs), warnings=list(plan.warnings))  # fmt: skip
    for warning in plan.warnings:
        app.display.warning("plan", f"object plan: {warning}")


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
