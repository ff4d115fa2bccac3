"""``asyncwifi sync``: keep a database in step with the platform (see docs/guides/sync.md).

``--to sqlite:///PATH`` or ``--to postgresql://...``; ``--once`` for one pass (exit 0),
otherwise a daemon that follows new events and refreshes the rest until SIGTERM/SIGINT,
stopping between transactions. ``--until`` is exclusive, as in ``events backfill``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import click

from asyncwifi._defaults import (
    LEASE_TTL,
    LOOKBACK,
    MODIFIED_FROM,
    MODIFIED_TO,
    OBJECT_SHARE,
    POLL_INTERVAL,
    REQUEST_SHARE,
    SETTLE,
)
from asyncwifi._instant import MS, format_duration
from asyncwifi.cli._app import App, pass_app
from asyncwifi.cli._config import rate_store_option
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._options import (
    ACCOUNT,
    OUTPUT,
    Command,
    deprecated_alias,
    global_options,
    pii_options,
    pii_policy,
)
from asyncwifi.cli._sync_start import (
    claim_lease,
    destination_failure,
    open_at_start,
    run_on_database,
)
from asyncwifi.cli._types import InstantType, duration_option
from asyncwifi.cli._words import counted

if TYPE_CHECKING:
    from asyncwifi.engine import LeaseKeeper
    from asyncwifi.sync import Syncer, SyncMetrics, SyncPlan

__all__ = ["sync_command"]


def _lookback(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    from asyncwifi.engine import lookback_of

    if value is None:
        return None
    try:
        return lookback_of(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


#: the defaults the help says: the table's (``asyncwifi._defaults``), as the plan reads them
_SAID_LOOKBACK = f"{format_duration(LOOKBACK)}, longer if the sync finds events that late"
_SAID_SETTLE = (
    f"{format_duration(SETTLE)}, or the lookback when the object plan reads each event once"
)


@click.command("sync", cls=Command)
@click.option("--to", "url", required=True, help="sqlite:///PATH or postgresql://USER@HOST/DB.")
@click.option(
    "--since",
    type=InstantType(),
    help="Start of events (default 7 d ago); on a database synced before, an earlier "
    "--since reads the events before its start first.",
)
@click.option("--until", type=InstantType(),
              help="Stop events here (exclusive; default: follow).")  # fmt: skip
@click.option("--once", is_flag=True, help="One pass over every resource, then exit 0.")
@click.option(
    "--request-share",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=REQUEST_SHARE,
    show_default=True,
    help="Share of the day's requests (the quota) this sync may use; the rest is left to "
    "the key's other users. Objects: --object-share.",
)
@deprecated_alias("--budget", use="--request-share", target="request_share",
                  type=click.FloatRange(0.0, 1.0, min_open=True))  # fmt: skip
@rate_store_option("Share the key's quota and this request share with its other users, in "
                   "Redis (every process of the key uses the same).")  # fmt: skip
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve /metrics (Prometheus) and /healthz on this port.")  # fmt: skip
@click.option("--object-share", type=click.FloatRange(0.0, 1.0, min_open=True),
              default=OBJECT_SHARE, show_default=True,
              help="Share of the month's object allowance (--allowance) this sync plans to "
              "spend: it chooses the cadences below to stay inside it. Requests: "
              "--request-share.")  # fmt: skip
@duration_option("--poll", min_open=True, said_default=format_duration(POLL_INTERVAL),
                 help="Daemon: between polls for new events.")  # fmt: skip
@duration_option("--lookback", callback=_lookback, said_default=_SAID_LOOKBACK,
                 help="Store events that appear up to this long after their own time: each "
                 "span is read once more this much later (0: off; at most 1d).")  # fmt: skip
@duration_option("--settle", said_default=_SAID_SETTLE,
                 help="Read events once they are this old.")  # fmt: skip
@duration_option("--refresh-every", min_open=True, said_default="the object plan's",
                 help="Between reads of changed contacts and hotspots, and of "
                 "segments.")  # fmt: skip
@duration_option("--reconcile-every", said_default="the object plan's",
                 help="Between full reads of contacts and hotspots (they find deletes; 0: "
                 "every pass).")  # fmt: skip
@click.option("--modified-from-param", default=MODIFIED_FROM, show_default=True,
              help="Query name of the contacts' modified >= filter (not in the docs).")  # fmt: skip
@click.option("--modified-to-param", default=MODIFIED_TO, show_default=True,
              help="Query name of the contacts' modified <= filter.")  # fmt: skip
@click.option("--wait-for-lease", is_flag=True,
              help="Another sync of the organization holds this database: wait for it to "
              "end (default: exit 75 naming it).")  # fmt: skip
@click.option(
    "--resources",
    default=None,
    metavar="LIST",
    help="Keep only these (comma-separated: events, contacts, hotspots, segments; "
    "default: all). What is not kept is never read: no request, no object.",
)
@click.option("--event-types", default=None, metavar="LIST",
              help="Keep only these event types (comma-separated, e.g. visit,login; "
              "default: every type).")  # fmt: skip
@pii_options("the mirror")
@click.option("--on-delete", type=click.Choice(["soft", "purge"]), default="soft",
              show_default=True,
              help="A delete the sync infers: mark deleted_at (soft), or remove the row "
              "(purge; SQLite zeroes its bytes).")  # fmt: skip
@duration_option("--retention", min_open=True, said_default="none, kept for ever",
                 help="Local retention: purge contacts inactive (or created, see "
                 "--retention-by) and events older than this, and never write them again "
                 "(0 requests, 0 objects).")  # fmt: skip
@click.option("--retention-by", type=click.Choice(["activity", "creation"]),
              default="activity", show_default=True,
              help="A contact's age for --retention: its last activity (modified) or its "
              "creation.")  # fmt: skip
@click.option(
    "--allow-mass-delete",
    is_flag=True,
    help="Accept one complete read that retires more than max(10 rows, 10 %) of "
    "a table (withheld by default: an empty answer is not taken for deletes).",
)
@duration_option("--lease-ttl", default=LEASE_TTL, min=0.1, hidden=True, help="The lease's life.")
@global_options(ACCOUNT, OUTPUT)
@pass_app
def sync_command(
    app: App,
    url: str,
    since: datetime | None,
    until: datetime | None,
    once: bool,
    request_share: float,
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
    resources: str | None,
    event_types: str | None,
    pii: str | None,
    pii_key_file: str | None,
    on_delete: str,
    retention: float | None,
    retention_by: str,
    allow_mass_delete: bool,
    lease_ttl: float,
) -> None:
    """Keep a database in sync: contacts, events, hotspots and segments, exactly once.

    Every batch is written with its checkpoint in one transaction: kill it at any moment
    and run it again, nothing is lost or doubled. Without --once it runs until SIGTERM.
    """
    from asyncwifi.engine import Budget, open_destination
    from asyncwifi.errors import ValidationError
    from asyncwifi.sync import FIRST_RUN, Syncer, SyncOptions

    if since is not None and until is not None and since >= until:
        raise click.UsageError("--since must be before --until")
    try:  # a bad selection: one line, exit 78, before any request
        SyncOptions(resources=resources, event_types=event_types)
    except ValidationError as exc:
        raise CliFailure(str(exc), ExitCode.CONFIG) from None
    policy = pii_policy(pii, pii_key_file)  # the same for a bad PII policy
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
            options = SyncOptions(
                wait_for_space=not once,  # one pass ends on a full disk (exit 73)
                since=since,
                until=None if until is None else until - MS,
                poll_interval=poll,
                lookback=LOOKBACK if lookback is None else lookback,
                settle=settle,
                refresh_every=refresh_every,
                reconcile_every=reconcile_every,
                object_share=object_share,
                modified_from=modified_from_param,
                modified_to=modified_to_param,
                allow_mass_delete=allow_mass_delete,
                resources=resources,
                event_types=event_types,
                pii=policy,
                on_delete=on_delete,
                retention=retention,
                retention_by=retention_by,
            )
            # the limiter's own counts (every process's on the key with --rate-store); a
            # client without a day's quota (lifted, as the benchmark does) has none to share
            day = api.scheduler.limits.day
            shared = Budget(api.scheduler, request_share) if day is not None else None
            syncer = Syncer(
                api, destination, options=options, budget=shared,
                on_plan=lambda plan: _say_plan(app, plan),
                on_pass=lambda stats: _report(app, syncer, f"pass {stats.passes} done"),
            )  # fmt: skip
            # first: a port in use is said before the database is opened (or created)
            metrics = await _serve_metrics(app, syncer, metrics_port)
            try:
                await open_at_start(destination, url)
                keeper = await claim_lease(app, destination, url, wait_for_lease, lease_ttl)
                loop = asyncio.get_running_loop()
                for signum in (signal.SIGINT, signal.SIGTERM):
                    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                        loop.add_signal_handler(signum, _stopper(app, syncer))
                started = True
                await _run(app, syncer, keeper, once, since)
            finally:
                if metrics is not None:
                    await metrics.stop()
            if syncer.full is not None:  # stopped while it waited for space: a pass cut short
                full = destination_failure(syncer.full, url)
                assert full is not None
                raise full

    run_on_database(go(), url)


async def _run(
    app: App, syncer: Syncer, keeper: LeaseKeeper, once: bool, since: datetime | None
) -> None:
    """The events before the database's start if ``--since`` asks for them, then one pass
    or the daemon, its lease kept; then the lease released, the database closed,
    whatever happened."""
    from asyncwifi.sync import read_earlier

    def say(line: str, warning: bool) -> None:
        (app.display.warning if warning else app.display.info)("sync", line)

    keeping = asyncio.create_task(keeper.keep(lambda lost: syncer.stop()))
    try:
        await read_earlier(syncer, since, say)
        if syncer.stopping:
            _report(app, syncer, "stopped")
        elif once:
            await syncer.run_once()
            _report(app, syncer, "stopped" if syncer.stopping else "pass done")
        else:
            app.display.info("sync", f"syncing into {syncer.destination!r}; SIGTERM to stop")
            await syncer.run_forever()
            _report(app, syncer, "stopped")
    finally:
        await syncer.drain()
        keeping.cancel()
        await asyncio.gather(keeping, return_exceptions=True)
        await keeper.release()
        await syncer.destination.close()
    if keeper.lost is not None:
        raise CliFailure(f"{keeper.lost}; this sync stopped", ExitCode.TEMPFAIL)


async def _serve_metrics(app: App, syncer: Syncer, port: int | None) -> SyncMetrics | None:
    """``--metrics-port``'s server, started; a port that cannot be used is one line naming
    the option (exit 78)."""
    if port is None:
        return None
    from asyncwifi.sync import SyncMetrics

    metrics = SyncMetrics(syncer.api, syncer)
    try:
        bound = await metrics.start(port)
    except OSError as exc:
        await metrics.stop()
        raise CliFailure(
            f"--metrics-port {port}: the port cannot be used on 127.0.0.1 "
            f"({os.strerror(exc.errno) if exc.errno else exc}): choose another, or stop "
            "what listens there",
            ExitCode.CONFIG,
        ) from None
    app.display.info("metrics", f"metrics on http://127.0.0.1:{bound}/metrics", port=bound)
    return metrics


def _say_plan(app: App, plan: SyncPlan) -> None:
    """The sync's object plan, as it is made (the sync says a plan once, until it changes):
    what it chose and what that costs, then each warning once, as a warning (``-q`` keeps
    them); the sync logs nothing of a plan it hands over here."""
    lines = plan.describe()[: -len(plan.warnings) or None]
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
