"""The sync job: the organization's resources copied into a destination (the engine's
:class:`~asyncwifi.engine.Copier`), one pass or a daemon, on an object plan.

- Objects are a quota too (spec §8): before it reads, the sync makes its plan
  (``_plan``: from ``options.object_share`` of the month's allowance, what the store
  counted this month for the key, the days left, and what it measured of the
  organization, ``_observed``) and says it: how late events are found, how often
  hotspots and segments are read, how often contacts and hotspots are reconciled, what
  that costs a month, and what does not fit. A read that is not due is not made: when each
  was last made is a checkpoint, so a pass run every minute reads segments as often as
  the plan says, not every minute. The daemon makes its plan anew every
  :data:`REPLAN` (after its first pass, when it knew nothing before; and at once when the
  audit found events later than the lookback the plan may lengthen). A plan is said when
  it differs from the last one said (its reads, or the kinds of its warnings: not at every
  re-plan whose figures moved a little); with ``on_plan`` it is said there, else logged.
- A change of plan never drops a read it owes: every rung's event feed keeps the
  lookback's watermark (saved in the events checkpoint), so the re-read the previous rung
  owed is made by the next, once; the one-read rung owes none of its own.
- The day's quota or the month's object allowance spent (``QuotaExhaustedError``): the
  sync says so, sleeps until the reset, and goes on from its checkpoints.
- The daemon follows new events and refreshes contacts, hotspots and segments on the
  plan's cadence; ``stop()`` ends it between transactions.
- It writes the client's organization's rows (``api.organization``): a destination opened
  without one becomes the client's organization's, one for another is refused. A
  ``LeaseLostError`` (another holder took the organization) is never retried: it ends the
  pass or the daemon.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from asyncwifi._client import Client
from asyncwifi._instant import format_instant, period_end
from asyncwifi.engine import (
    EVENTS,
    Batch,
    Budget,
    ContactFeed,
    Copier,
    Destination,
    EventFeed,
    Stopped,
    Write,
    apply_retention,
    snapshot,
    stoppable,
)
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.sync._hotspots import refresh_changed
from asyncwifi.sync._observed import CHECKPOINT as OBSERVED
from asyncwifi.sync._observed import Measured
from asyncwifi.sync._options import DEFAULTS, SyncOptions, SyncStats
from asyncwifi.sync._plan import SyncPlan, plan_sync

__all__ = ["REPLAN", "Syncer"]

log = logging.getLogger("asyncwifi.sync")

CONTACTS = "contacts"
#: checkpoints of when each full read or refresh was last made (clock seconds)
RECONCILED = "contacts.reconciled_at"
HOTSPOTS_RECONCILED = "hotspots.reconciled_at"
HOTSPOTS_REFRESHED = "hotspots.refreshed_at"
SEGMENTS_REFRESHED = "segments.refreshed_at"
#: clock seconds between two plans of a daemon (what it measured moves them)
REPLAN = 6 * 3_600.0
#: contacts changed this recently are left to the next read, which starts after them
CONTACTS_SETTLE = 60.0
DAY = 86_400.0


class Syncer(Copier):
    """Keeps ``destination`` in step with the organization behind ``api`` (module
    docstring); ``on_plan(plan)`` sees each object plan as it is made anew, ``on_pass(stats)``
    each pass of the daemon once it succeeded."""

    #: the sync's options (the copy loop's among them) and what it did
    options: SyncOptions
    stats: SyncStats

    def __init__(
        self,
        api: Client,
        destination: Destination,
        *,
        options: SyncOptions | None = None,
        budget: Budget | None = None,
        on_write: Callable[[str, int], None] | None = None,
        on_plan: Callable[[SyncPlan], None] | None = None,
        on_pass: Callable[[SyncStats], None] | None = None,
    ) -> None:
        super().__init__(api, destination, options=options or SyncOptions(), on_write=on_write)
        self.stats = SyncStats()
        self.budget = budget
        self.on_plan = on_plan
        #: sees the stats after each pass of the daemon succeeded (the command's line)
        self.on_pass = on_pass
        #: the object plan in force (None until the first is made)
        self.plan: SyncPlan | None = None
        self._measured: Measured | None = None
        #: the event feed's counts already measured (events, event seconds)
        self._feed: EventFeed | None = None
        self._feed_seen = (0, 0.0)
        #: the plan last said (a plan is said again when its gist changes)
        self._said: SyncPlan | None = None
        #: set when the audit found events later than the plan's lookback: plan anew now
        self._replan = asyncio.Event()

    # -- the plan --------------------------------------------------------------------------
    async def make_plan(self) -> SyncPlan:
        """The object plan from what is known now (what was measured, the sets' live sizes
        in the database, what the store counted this month for the key); said (``on_plan``,
        else the log) when it differs from the one last said (see the module docstring)."""
        measured = await self._measurements()
        contacts, hotspots, segments = [
            await self._retrying(functools.partial(self.destination.count, table), read=True)
            for table in ("contacts", "hotspots", "segments")
        ]
        now = self.api.clock.now()
        spent = sum((await self.api.scheduler.objects()).values())
        observed = measured.observed(
            contacts=contacts, hotspots=hotspots, segments=segments, spent=spent,
            days_left=(period_end(now, "month") - now) / DAY,
        )  # fmt: skip
        plan = plan_sync(
            observed,
            allowance=self.api.scheduler.limits.allowance,
            share=self.options.object_share,
            insisted=self.options.insisted,
            defaults=DEFAULTS,
            current=None if self.plan is None else self.plan.rung,
            resources=self.kept,
        )
        said = self._said
        moved = said is not None and abs(plan.projection - said.projection) > 0.1 * said.projection
        if said is None or moved or plan.gist != said.gist:
            if self.on_plan is not None:
                self.on_plan(plan)
            else:
                plan.log(log)
            self._said = plan
        self.plan = plan
        self.stats.projection = plan.projection
        return plan

    async def _measurements(self) -> Measured:
        if self._measured is None:
            self._measured = Measured.decode(await self.checkpoint(OBSERVED))
        return self._measured

    async def _save_measurements(self) -> None:
        """Add what the event feed delivered since it was last read, and keep it all."""
        measured = await self._measurements()
        feed = self._feed
        if feed is not None:
            events, seconds = feed.measured
            measured.add_events(events - self._feed_seen[0], seconds - self._feed_seen[1])
            self._feed_seen = (events, seconds)
            self._late_seen(measured, feed)
        await self._write(Write(EVENTS, checkpoints={OBSERVED: measured.encode()}))

    def _late_seen(self, measured: Measured, feed: EventFeed) -> None:
        """What the feed's audit found late, kept; when it is later than the plan in force knew
        and than its lookback, the plan is made anew at once (``_replan``: its lookback may
        follow)."""
        rereads = feed.rereads
        measured.late_by = max(measured.late_by, rereads.late_by)
        measured.late_told = max(measured.late_told, rereads.told)
        plan = self.plan
        if plan is not None and plan.observed.late_by < measured.late_by > plan.lookback:
            self._replan.set()

    async def _last(self, *names: str) -> float | None:
        """When the latest of the reads stamped ``names`` was made (None: never)."""
        stamps = [await self.checkpoint(name) for name in names]
        return max((float(s) for s in stamps if s is not None), default=None)

    async def _due(self, every: float, *names: str) -> bool:
        """Whether a read stamped ``names`` is due (never made, or ``every`` ago)."""
        last = await self._last(*names)
        return last is None or self.api.clock.now() - last >= every

    def _stamp(self, batch: Batch[Any]) -> None:
        """A complete read's batch carries when it was made (its checkpoint)."""
        if batch.complete:
            batch.checkpoint = repr(self.api.clock.now())

    # -- the resources -------------------------------------------------------------------
    @property
    def kept(self) -> frozenset[str]:
        """The resources this sync keeps (``SyncOptions.resources``; ``_selection``)."""
        return frozenset(self.options.resources or ())

    @stoppable
    async def sync_events(self, *, follow: bool = False) -> int:
        """Events from the checkpoint (else ``since``) to ``until`` (or now, or forever)."""
        opts = self.options
        plan = self.plan or await self.make_plan()
        checkpoint = await self.checkpoint(EVENTS)
        measured = await self._measurements()
        now = datetime.fromtimestamp(self.api.clock.now(), UTC)
        since = opts.first_start(now)
        # every rung keeps the lookback (and its watermark): the re-read a previous rung
        # owed is made once; reading a lookback late, the forward read moves the watermark
        feed = self._feed = EventFeed(
            self.api,
            checkpoint=checkpoint,
            since=since,
            until=opts.until,
            follow=follow,
            poll_interval=plan.poll,
            settle=plan.settle,
            page_size=opts.page_size,
            budget=self.budget,
            lookback=plan.lookback,
            audit=plan.audit,
            stored=lambda ids: self._retrying(
                lambda: self.destination.existing(EVENTS, ids), read=True
            ),
            list_options=None if opts.event_types is None else {"types": opts.event_types},
        )
        self._feed_seen = (0, 0.0)
        feed.rereads.told = measured.late_told  # said once, across feeds and runs
        feed.rereads.on_late = lambda _: self._late_seen(measured, feed)

        def newest(_: Batch[Any]) -> None:
            if feed.newest is not None:
                self.stats.newest_event = feed.newest

        return await self.copy(feed.__aiter__(), EVENTS, newest)

    @stoppable
    async def sync_contacts(self, *, reconcile: bool | None = None) -> int:
        """Contacts changed since the checkpoint; a full scan (and deletes) when due, or
        when the server ignores the modified-date filter. A first run's read of every
        contact is its reconcile: nothing was stored before it, so nothing to find gone."""
        opts = self.options
        plan = self.plan or await self.make_plan()
        checkpoint = await self.checkpoint(CONTACTS)
        measured = await self._measurements()
        feed = ContactFeed(
            self.api,
            checkpoint=checkpoint,
            modified_from=opts.modified_from,
            modified_to=opts.modified_to,
            budget=self.budget,
        )
        before, started = self._total(), self.api.clock.now()
        changed = 0

        def count(batch: Batch[Any]) -> None:
            nonlocal changed
            changed += len(batch.items)

        settled = datetime.fromtimestamp(started - CONTACTS_SETTLE, UTC)
        await self.copy(feed.changes(until=settled), CONTACTS, count)
        if checkpoint is not None and feed.incremental:
            measured.add_changes(changed, started - (measured.changes_at or started))
        measured.changes_at = started
        if reconcile is None:
            if checkpoint is None and feed.incremental and not self._stopping.is_set():
                stamp = {RECONCILED: repr(started)}  # the first read was a full one
                await self._write(Write(CONTACTS, checkpoints=stamp))
            every = opts.reconcile_every
            reconcile = await self._due(
                plan.cadence.reconcile if every is None else every, RECONCILED
            )
        if (reconcile or not feed.incremental) and not self._stopping.is_set():
            await self.copy(feed.scan(), RECONCILED, self._stamp)
        return self._total() - before

    @stoppable
    async def sync_snapshot(self, resource: str) -> int:
        """Hotspots or segments: the whole list, deletes included."""
        name = HOTSPOTS_RECONCILED if resource == "hotspots" else SEGMENTS_REFRESHED
        batch = await self._unless_stopped(
            lambda: snapshot(self.api, resource, budget=self.budget)  # type: ignore[arg-type]
        )
        self._stamp(batch)
        before = self._total()
        await self._apply(batch, name)
        await self._flush()
        return self._total() - before

    @stoppable
    async def sync_hotspots(self) -> int:
        """Hotspots: the whole list when its reconcile is due (or the date filter cannot
        tell changes), else those changed since the last refresh, when it is due."""
        plan = self.plan or await self.make_plan()
        measured = await self._measurements()
        every = self.options.reconcile_every
        whole = every if every is not None else plan.cadence.hotspots_reconcile
        param = self.options.hotspots_changed
        if (
            not param
            or measured.hotspot_filter is False
            or await self._due(whole, HOTSPOTS_RECONCILED)
        ):
            return await self.sync_snapshot("hotspots")
        # a full read is a refresh too
        if not await self._due(plan.cadence.refresh, HOTSPOTS_REFRESHED, HOTSPOTS_RECONCILED):
            return 0
        since = await self._last(HOTSPOTS_REFRESHED, HOTSPOTS_RECONCILED) or 0.0
        return await refresh_changed(self, since, param, HOTSPOTS_REFRESHED)

    @stoppable
    async def sync_segments(self) -> int:
        """Segments, whole, when the plan says a refresh is due."""
        plan = self.plan or await self.make_plan()
        every = self.options.refresh_every or plan.cadence.segments
        if not await self._due(every, SEGMENTS_REFRESHED):
            return 0
        return await self.sync_snapshot("segments")

    # -- passes ----------------------------------------------------------------------------
    @stoppable
    async def run_once(self) -> int:
        """One pass over every resource (each read made when the plan says it is due);
        returns the rows changed."""
        await self._until_store()
        plan = await self.make_plan()
        written = await self._quota_safe(self.sync_events) if EVENTS in self.kept else 0
        written += await self._refresh()
        await self._save_measurements()
        if not plan.observed.known and not self._stopping.is_set():
            await self.make_plan()  # the first pass measured what the plan needs
        self.stats.passes += 1
        self.stats.last_success = self.api.clock.now()
        return written

    async def _refresh(self) -> int:
        written = 0
        steps = {"contacts": self.sync_contacts, "hotspots": self.sync_hotspots,
                 "segments": self.sync_segments}  # fmt: skip
        for step in (step for name, step in steps.items() if name in self.kept):
            if self._stopping.is_set():
                break
            written += await self._quota_safe(step)
        if not self._stopping.is_set():  # local retention: 0 requests (``_retention``)
            written += sum((await apply_retention(self)).values())
        return written

    def _follow(self) -> asyncio.Task[int]:
        if EVENTS not in self.kept:  # no events kept: a follower with nothing to follow
            return asyncio.create_task(asyncio.sleep(0, 0))
        return asyncio.create_task(self._quota_safe(lambda: self.sync_events(follow=True)))

    async def run_forever(self) -> None:
        """Follow events and refresh the rest on the plan's cadence until :meth:`stop`."""
        try:
            await self._until_store()
            plan = await self.make_plan()
        except Stopped:
            return
        events = self._follow()
        planned = refreshed = self.api.clock.now()
        early = False  # woken for a plan, not for a pass
        try:
            while not self._stopping.is_set():
                done = False
                if not early:
                    await self._refresh()
                    refreshed = self.api.clock.now()  # the next pass a refresh after this one
                    done = not self._stopping.is_set()  # a pass cut short did not succeed
                    if done:
                        self.stats.passes += 1
                        self.stats.last_success = self.api.clock.now()
                await self._save_measurements()
                if done and self.on_pass is not None:
                    self.on_pass(self.stats)
                now = self.api.clock.now()
                if not plan.observed.known or now - planned >= REPLAN or self._replan.is_set():
                    self._replan.clear()
                    plan, was = await self.make_plan(), plan
                    planned = self.api.clock.now()
                    reads = (plan.late, plan.settle, plan.lookback, plan.poll)
                    if reads != (was.late, was.settle, was.lookback, was.poll):
                        # the follower goes on from its checkpoint: its cursor and the
                        # lookback's watermark (what the re-reads still owe)
                        events.cancel()
                        await asyncio.gather(events, return_exceptions=True)
                        events = self._follow()
                rest = refreshed + plan.cadence.refresh - self.api.clock.now()
                early = await self._rest(rest)
                if events.done():
                    events.result()  # a failure of the event follower ends the daemon
        except Stopped:
            pass  # a stop while the plan read the database: the end
        finally:
            events.cancel()
            await asyncio.gather(events, return_exceptions=True)
            await self.drain()

    async def _rest(self, seconds: float) -> bool:
        """Sleep ``seconds`` of the clock, or until a plan is asked for (True), or a stop."""

        async def either() -> bool:
            sleep = asyncio.ensure_future(self.api.clock.sleep(max(0.0, seconds)))
            replan = asyncio.ensure_future(self._replan.wait())
            try:
                await asyncio.wait({sleep, replan}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in (sleep, replan):
                    waiting.cancel()
                await asyncio.gather(sleep, replan, return_exceptions=True)
            return self._replan.is_set()

        try:
            return await self._unless_stopped(either)
        except Stopped:
            return False

    async def _quota_safe(self, step: Callable[[], Any]) -> int:
        """Run ``step``; when the day's quota (or the month's object allowance) is spent,
        sleep until the reset and rerun it (from the checkpoints it saved)."""
        while True:
            try:
                result: int = await step()
                return result
            except QuotaExhaustedError as exc:
                # until the day's figure is fully back, not the first free slot: a step
                # restarted on one request would spend it and stop again
                day = self.api.quota.day
                month = exc.limit.startswith("month")
                full = day.reset_at if day is not None and day.reset_at is not None else 0.0
                reset = exc.reset_at if month else max(exc.reset_at, full)
                self.stats.quota_sleeps += 1
                log.warning(
                    "sync: %s is spent; sleeping until %s, then resuming",
                    "the month's object allowance" if month else "the day's quota",
                    format_instant(reset, "seconds"),
                )
                await self._sleep(max(0.0, reset - self.api.clock.now()))
                if self._stopping.is_set():
                    return 0
