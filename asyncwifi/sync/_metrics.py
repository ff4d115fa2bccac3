"""Operability of a sync: Prometheus metrics and a health endpoint (prometheus-client, aiohttp).

``/metrics``: rows synced per table, requests per resource (and those re-reading the
recent past), late events stored (by the lookback, or by the audit: later than the
lookback), 429s, quota left today, lag behind the newest event, time of the last
successful pass, deletes the mass-delete guard withholds by table; objects (spec §8) this
UTC month and day by kind, as the limiter counts
them (``scheduler.objects()``: every process's of the key with a shared store), the month's
allowance by kind and the sync plan's month projection. ``/healthz``: 200 while the
database answers and a pass succeeded, else 503 with the reason (``degraded`` while the
mass-delete guard withholds deletes).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from asyncwifi._extras import require
from asyncwifi.ratelimit import ALL, KINDS

if TYPE_CHECKING:
    from asyncwifi._client import Client
    from asyncwifi.sync._runner import Syncer

__all__ = ["SyncMetrics"]


class SyncMetrics:
    """The metrics of one :class:`~asyncwifi.sync.Syncer`, served on ``port``."""

    def __init__(self, api: Client, syncer: Syncer) -> None:
        require("prometheus_client", "sync", "--metrics-port (SyncMetrics)")
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.api = api
        self.syncer = syncer
        self.registry = registry = CollectorRegistry()
        self.rows = Counter(
            "asyncwifi_sync_rows", "Rows changed in the database", ["table"], registry=registry
        )
        self.requests = Gauge(
            "asyncwifi_sync_requests", "API requests sent, per resource", ["resource"],
            registry=registry,
        )  # fmt: skip
        self.lookback_requests = Gauge(
            "asyncwifi_sync_lookback_requests",
            "API requests spent re-reading the recent past for late events (lookback and "
            'audit; part of asyncwifi_sync_requests{resource="events"})',
            registry=registry,
        )
        self.late = Counter(
            "asyncwifi_sync_late_events",
            "Events stored after they appeared late, by what found them: the lookback, or "
            "the audit (later than the lookback: lengthen it)",
            ["found_by"], registry=registry,
        )  # fmt: skip
        self._late_counted = dict.fromkeys(syncer.stats.late_events, 0)
        for kind in self._late_counted:
            self.late.labels(found_by=kind)  # shown at 0 from the start
        self.throttled = Counter(
            "asyncwifi_sync_rate_limited_responses", "429 answers received", registry=registry
        )
        self.quota_left = Gauge(
            "asyncwifi_sync_quota_remaining_day", "Requests left today (-1: unknown)",
            registry=registry,
        )  # fmt: skip
        self.lag = Gauge(
            "asyncwifi_sync_event_lag_seconds", "Now minus the newest event stored (-1: none)",
            registry=registry,
        )  # fmt: skip
        self.last_success = Gauge(
            "asyncwifi_sync_last_success_timestamp", "Clock time of the last successful pass",
            registry=registry,
        )  # fmt: skip
        self.dead_letters = Gauge(
            "asyncwifi_sync_dead_letters", "Records set aside this run", registry=registry
        )
        self.objects = Gauge(
            "asyncwifi_sync_objects",
            "Objects exchanged (spec §8: records returned, created, edited or deleted) this "
            "UTC month or day, by kind, as the limiter counts them (every process's of the key "
            "with a shared rate store)",
            ["period", "kind"], registry=registry,
        )  # fmt: skip
        self.allowance = Gauge(
            "asyncwifi_sync_objects_allowance",
            "The month's object allowance by kind ('all': every kind together; -1: none known)",
            ["kind"], registry=registry,
        )  # fmt: skip
        self.projection = Gauge(
            "asyncwifi_sync_objects_projection",
            "Objects a month the sync's plan projects (-1: no plan yet)", registry=registry,
        )  # fmt: skip
        self.withheld = Gauge(
            "asyncwifi_sync_withheld_deletes",
            "Deletes the mass-delete guard withholds now, by table (a complete read that "
            "would retire more than its thresholds; 0 once an honest read applies them)",
            ["table"], registry=registry,
        )  # fmt: skip
        self._withheld_tables: set[str] = set()
        self._runner: web.AppRunner | None = None
        self._unhook: Callable[[], None] | None = None
        #: the kinds of object shown so far (a kind gone from a new period shows 0)
        self._kinds: set[str] = set()

    def on_write(self, table: str, rows: int) -> None:
        """``Syncer(on_write=...)``: count rows per table."""
        self.rows.labels(table=table).inc(rows)

    def on_response(self, info: Any) -> None:
        """A client ``on_response`` hook: count the 429s."""
        if getattr(info, "status", None) == 429:
            self.throttled.inc()

    def refresh(self) -> None:
        """Read the gauges from the syncer and the client."""
        stats = self.syncer.stats
        for resource, count in stats.requests.items():
            self.requests.labels(resource=resource).set(count)
        self.lookback_requests.set(stats.lookback_requests)
        for kind, count in stats.late_events.items():
            self.late.labels(found_by=kind).inc(count - self._late_counted[kind])
            self._late_counted[kind] = count
        day = self.api.quota.day
        self.quota_left.set(-1 if day is None or day.remaining is None else day.remaining)
        newest = stats.newest_event
        now = datetime.fromtimestamp(self.api.clock.now(), UTC)
        self.lag.set(-1 if newest is None else (now - newest).total_seconds())
        if stats.last_success is not None:
            self.last_success.set(stats.last_success)
        self.dead_letters.set(stats.dead_letters)
        allowance = self.api.scheduler.limits.allowance
        for kind, figure in (allowance or {ALL: -1}).items():
            self.allowance.labels(kind=kind).set(figure)
        self.projection.set(-1 if stats.projection is None else stats.projection)
        self._withheld_tables.update(stats.withheld_deletes)
        for table in self._withheld_tables:
            self.withheld.labels(table=table).set(stats.withheld_deletes.get(table, 0))

    async def refresh_objects(self) -> None:
        """Read the objects of this month and day from the limiter's store (not a request);
        every kind is shown, at 0 when none was exchanged (a new period starts at 0)."""
        scheduler = self.api.scheduler
        for period in ("month", "day"):
            counts = await scheduler.objects(period=period)
            for kind in sorted({*KINDS, *counts, *self._kinds}):
                self.objects.labels(period=period, kind=kind).set(counts.get(kind, 0))
            self._kinds.update(counts)

    async def _metrics(self, request: web.Request) -> web.Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        await self.refresh_objects()
        self.refresh()
        body = generate_latest(self.registry)
        resp = web.Response(body=body)
        resp.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return resp

    async def _health(self, request: web.Request) -> web.Response:
        stats = self.syncer.stats
        if stats.store_down_since is not None:
            return web.json_response({"status": "database unreachable"}, status=503)
        if stats.last_success is None:  # rows written are not a pass that succeeded
            return web.json_response({"status": "no pass has succeeded yet"}, status=503)
        if withheld := stats.withheld_deletes:
            said = ", ".join(f"{n} of {t}" for t, n in sorted(withheld.items()))
            return web.json_response(
                {"status": "degraded", "reason": f"mass deletes withheld: {said}"}, status=503
            )
        return web.json_response({"status": "ok", "passes": stats.passes})

    async def start(self, port: int, host: str = "127.0.0.1") -> int:
        """Count the syncer's rows and the client's 429s from now on, and serve ``/metrics``
        and ``/healthz``; returns the port (a free one when 0)."""
        self.syncer.on_write = self.on_write
        if self._unhook is None:
            self._unhook = self.api.add_hook("response", self.on_response)
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._health)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        return int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop counting and serving."""
        unhook, self._unhook = self._unhook, None
        if unhook is not None:
            unhook()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
