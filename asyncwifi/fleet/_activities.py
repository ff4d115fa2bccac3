"""The sync activity: one organization's sync, run by a worker for a while.

Each attempt resolves the organization's key locally (the worker's ``fleet.toml`` and
environment: no secret enters Temporal), takes the organization's lease on a fresh view of
the worker's one database (a fencing token: a stale attempt that Temporal gave up on but
that still runs cannot commit), and runs the sync: for ``run_for`` real seconds the daemon's
own loop (:meth:`~asyncwifi.sync.Syncer.run_forever`: it follows events, refreshes the rest
on the plan's cadence and keeps its state between polls), or one pass
(:meth:`~asyncwifi.sync.Syncer.run_once`) when ``run_for`` is 0. It heartbeats once a third
of its heartbeat timeout, from a ticker (a request may wait a minute on the quota), not at
each commit: each heartbeat is a call to the Temporal server, which stores the last. The
details are the run's counts so far (``fleet status`` reads them): the database's
checkpoints are the truth, never the heartbeat. The result says the passes, rows, the
objects of the month (spec §8: the limiter's count, every worker's with a shared rate
store), the allowance and the sync plan's month projection, plain numbers; the worker's
metrics (``--metrics-port``) carry them too. Cancelled (a signal of its workflow, the worker
stopping), the run ends between two transactions and says what it did.

What cannot be done now comes back as a :class:`PassResult` failure that the workflow turns
into a status and a wait, never a hot loop: a refused key ("unauthorized"), a spent day
("quota", with the reset), a database that stays unreachable ("database": the sync asks the
API for nothing while it cannot store). A lost lease ends the attempt, not retried. Anything
else is raised as an ``ApplicationError`` whose message holds no secret.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from asyncwifi._auth import hide_password
from asyncwifi._client import Client
from asyncwifi._instant import format_instant
from asyncwifi.engine import (
    Budget,
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
    PiiPolicy,
)
from asyncwifi.errors import ConfigurationError, UnauthorizedError
from asyncwifi.fleet._clients import ClientPool
from asyncwifi.fleet._config import FleetConfig, Organization
from asyncwifi.fleet._workflow import PASS_ACTIVITY, PassRequest, PassResult
from asyncwifi.ratelimit import ALL
from asyncwifi.sync import Syncer, SyncOptions

__all__ = ["PassActivities", "fleet_database_url"]

log = logging.getLogger("asyncwifi.fleet")
UNREACHABLE = "the database is unreachable"
#: real seconds a cancelled run has to end between two transactions before it is cut
STOP_PATIENCE = 2.0


def fleet_database_url(url: str, idle_transaction_timeout: float | None) -> str:
    """``url`` with PostgreSQL's ``idle_in_transaction_session_timeout`` (seconds; asyncpg
    sends a URL's other parameters as server settings): a worker frozen mid-transaction
    has it aborted by the server, its row locks freed for the next lease holder. A URL
    that sets it already keeps its own; SQLite URLs are unchanged."""
    name = "idle_in_transaction_session_timeout"
    if (
        idle_transaction_timeout is None
        or not url.startswith(("postgresql://", "postgres://"))
        or f"{name}=" in url
    ):
        return url
    joint = "&" if "?" in url else "?"
    return f"{url}{joint}{name}={max(1, round(idle_transaction_timeout * 1000))}"


class PassActivities:
    """The worker's pass activity over its configuration, database and clients.

    ``store_patience``: real seconds the database may stay unreachable inside a pass before
    the pass gives up and its workflow waits (the sync retries meanwhile, spending nothing).
    """

    def __init__(
        self,
        config: FleetConfig,
        destination: Destination,
        clients: ClientPool,
        *,
        database_url: str = "",
        identity: str = "worker",
        store_patience: float = 60.0,
    ) -> None:
        self.config = config
        self.destination = destination
        self.clients = clients
        self.identity = identity
        self.store_patience = store_patience
        self._database_url = database_url
        self._opened = False
        self._opening = asyncio.Lock()
        #: passes done by this worker, by organization (the metrics read it)
        self.passes: dict[str, int] = {}

    async def _open(self) -> None:
        """Open the worker's database once (the first pass that finds it up does it)."""
        async with self._opening:
            if not self._opened:
                try:
                    await self.destination.open()
                except ConfigurationError as exc:  # a database from before organizations
                    raise ApplicationError(
                        f"{exc}. Carry it over once, before the fleet: run asyncwifi sync "
                        "--once --to URL with that organization's ASYNCWIFI_CLIENT_KEY and "
                        "ASYNCWIFI_CLIENT_SECRET (its rows become its own), then the workers",
                        type="ConfigurationError",
                        non_retryable=True,
                    ) from None
                self._opened = True

    @activity.defn(name=PASS_ACTIVITY)
    async def sync_pass(self, request: PassRequest) -> PassResult:
        """A run (or one pass) of ``request.organization``'s sync (module docstring)."""
        try:
            org = self.config[request.organization]
            api = self.clients.client(org)
        except Exception as exc:  # not this worker's organization, a secret not set here
            raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from None
        try:
            return await self._run(org, api, request)
        except ApplicationError:
            raise
        except UnauthorizedError as exc:
            await self.clients.drop(org.organization)
            log.warning("fleet: %s: the API refused its key: %s", org.organization, exc)
            return PassResult(failure="unauthorized", error=self._clean(str(exc), org))
        except DestinationUnavailableError as exc:  # said by its cause: no URL in a status
            cause = self._clean(str(exc.__cause__ or exc), org)
            return PassResult(failure="database", error=f"{UNREACHABLE}: {cause}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # the message without the type: an ApplicationError shows as "type: message"
            failure = ApplicationError(
                self._clean(str(exc), org),
                type=type(exc).__name__,
                non_retryable=isinstance(exc, LeaseLostError),
            )
            what = "" if failure.non_retryable else "the pass failed: "
            log.warning("fleet: %s: %s%s", org.organization, what, failure)
            raise failure from None

    async def _run(self, org: Organization, api: Client, request: PassRequest) -> PassResult:
        info = activity.info()
        await self._open()
        view = self.destination.for_organization(org.organization)  # type: ignore[attr-defined,unused-ignore]
        every = info.heartbeat_timeout.total_seconds() / 3 if info.heartbeat_timeout else 10.0
        taking = asyncio.ensure_future(
            view.take_lease(f"{self.identity} {info.workflow_id} attempt {info.attempt}")
        )
        try:  # a frozen worker's open write holds the lease row: alive meanwhile, not retried
            while not (await asyncio.wait({taking}, timeout=every))[0]:
                activity.heartbeat(PassResult(passes=0, error="waiting for the lease"))
        finally:
            taking.cancel()
        taking.result()
        run = _Run(api)

        def on_pass(_: object) -> None:
            run.passes += 1
            self.passes[org.organization] = self.passes.get(org.organization, 0) + 1

        syncer = Syncer(
            api, view, options=_options(org, request.poll),
            budget=Budget(api.scheduler, org.request_share), on_write=run.wrote, on_pass=on_pass,
        )  # fmt: skip
        job = asyncio.ensure_future(_sync(syncer, request.run_for, on_pass))
        ticker = asyncio.create_task(self._tick(run, syncer, every, org.organization))
        try:
            await asyncio.shield(job)
        except asyncio.CancelledError:  # the workflow, the worker: end between transactions
            if job.done():
                raise
            run.interrupted = True
            syncer.stop()
            await asyncio.wait({job}, timeout=STOP_PATIENCE)
        finally:
            ticker.cancel()
            if not job.done():  # not ended within its patience: its batch in hand dropped
                job.cancel()
            await asyncio.gather(ticker, job, return_exceptions=True)
            if job.cancelled():  # cut inside a write: what the loop's own end would drain
                await syncer.drain()
        if not job.cancelled():
            job.result()  # a failure of the sync is the run's, cut short or not
        result = await run.figures(syncer)
        result.interrupted = run.interrupted
        _record_objects(org.organization, result.objects_month or 0, result.projection)
        stats = syncer.stats
        if stats.quota_sleeps:  # stopped by the ticker: wait for the reset
            reset, result.error = _spent(api)
            result.failure = "quota"
            result.retry_after = api.clock.real(max(0.0, reset - api.clock.now()))
        elif stats.store_down_since is not None:
            result.failure, result.error = "database", UNREACHABLE
        if result.failure is not None:
            result.passes += 1  # the pass that could not end
        return result

    async def _tick(self, run: _Run, syncer: Syncer, every: float, organization: str) -> None:
        """Heartbeat the run's counts every ``every`` seconds and when a pass ended (the SDK
        sends at most one per 0.8 x the heartbeat timeout, the last one kept); end the run
        when the day is spent or the database stays down (the workflow waits instead)."""
        down_since: float | None = None
        beat, said = time.monotonic(), 0
        while True:
            await asyncio.sleep(max(0.2, min(every, 1.0)))  # a spent day seen within a second
            stats = syncer.stats
            if stats.store_down_since is None:
                down_since = None
            elif down_since is None:
                down_since = time.monotonic()
            if time.monotonic() - beat >= every or run.passes != said:  # a pass: said soon
                beat, said = time.monotonic(), run.passes
                figures = await run.figures(syncer)
                activity.heartbeat(figures)
                _record_objects(organization, figures.objects_month or 0, figures.projection)
            too_long = (
                down_since is not None and time.monotonic() - down_since > self.store_patience
            )
            if stats.quota_sleeps or too_long:
                syncer.stop()
                return

    def _clean(self, text: str, org: Organization) -> str:
        """``text`` without the organization's secret or the database's password."""
        if self._database_url:
            text = hide_password(text, self._database_url)
        with contextlib.suppress(Exception):
            secret = org.secret().reveal()
            text = text.replace(secret, "***")
        return text


class _Run:
    """What a run did so far: its passes, the rows it wrote; its figures as a result."""

    def __init__(self, api: Client) -> None:
        self.api = api
        self.passes = 0
        self.rows = 0
        self.interrupted = False

    def wrote(self, _table: str, rows: int) -> None:
        self.rows += rows

    async def figures(self, syncer: Syncer) -> PassResult:
        """The run's counts and the newest figures (the limiter's, the sync's plan)."""
        scheduler, stats = self.api.scheduler, syncer.stats
        return PassResult(
            passes=self.passes,
            rows=self.rows,
            newest_event=None if stats.newest_event is None else format_instant(stats.newest_event),
            requests_today=sum((await scheduler.used()).values()),
            objects_month=sum((await scheduler.objects()).values()),
            objects_allowance=scheduler.limits.allowance.get(ALL),
            projection=stats.projection,
        )


async def _sync(syncer: Syncer, run_for: float, on_pass: Callable[[object], None]) -> None:
    """One pass (``run_for`` 0), else the daemon's loop for ``run_for`` real seconds (it
    ends between two transactions)."""
    if run_for <= 0:
        await syncer.run_once()
        on_pass(None)
        return
    ending = asyncio.get_running_loop().call_later(run_for, syncer.stop)
    try:
        await syncer.run_forever()
    finally:
        ending.cancel()


def _options(org: Organization, poll: float | None) -> SyncOptions:
    return SyncOptions(
        since=org.since,
        poll_interval=org.poll if poll is None else poll,
        settle=org.settle,
        lookback=org.lookback,
        refresh_every=org.refresh_every,
        reconcile_every=org.reconcile_every,
        object_share=org.object_share,
        resources=org.resources,
        event_types=org.event_types,
        pii=PiiPolicy.parse(org.pii),
    )


def _spent(api: Client) -> tuple[float, str]:
    """What a pass stopped by a spent quota waits for, and says: the month's object
    allowance once the limiter's count reached it (spec §8: back on the 1st), else the
    day's requests."""
    volume, now = api.quota.volume, api.clock.now()
    if volume.resets_at is not None and any(volume.remaining(k) == 0 for k in volume.allowance):
        return volume.resets_at, "the month's object allowance is spent"
    day = api.quota.day
    return (day.reset_at if day is not None and day.reset_at else now), "the day's quota is spent"


def _record_objects(organization: str, objects: int, projection: int | None) -> None:
    """The worker's metrics (``fleet worker --metrics-port``, Temporal's Prometheus endpoint):
    the organization's objects this month and the sync plan's projection (-1: no plan yet)."""
    meter = activity.metric_meter()
    where = {"organization": organization}
    meter.create_gauge(
        "asyncwifi_fleet_objects_month",
        "Objects exchanged this UTC month (spec §8), every kind, per organization",
    ).set(objects, where)
    meter.create_gauge(
        "asyncwifi_fleet_objects_projection",
        "Objects a month the sync's plan projects, per organization (-1: no plan yet)",
    ).set(-1 if projection is None else projection, where)
