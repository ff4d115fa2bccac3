"""The sync job: the organization's resources copied into a destination (the engine's
:class:`~asyncwifi.sync._copy.Copier`), one pass or a daemon, on an object plan.

- Objects are a quota too (spec §8): before it reads, the sync makes its plan
  (``_plan``: from ``options.object_share`` of the month's allowance and what it measured
  of the organization, ``_observed``) and says it: how late events are found, how often
  hotspots and segments are read, how often contacts and hotspots are reconciled, what
  that costs a month, and what does not fit. A read that is not due is not made: when each
  was last made is a checkpoint, so a pass run every minute reads segments as often as
  the plan says, not every minute. The daemon makes its plan anew every
  :data:`REPLAN` (and after its first pass, when it knew nothing before).
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
from asyncwifi._instant import format_instant
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.sync._budget import Budget
from asyncwifi.sync._copy import EVENTS, Copier, Stopped, stoppable
from asyncwifi.sync._destination import Destination, Write
from asyncwifi.sync._feeds import Batch, EventFeed
from asyncwifi.sync._observed import CHECKPOINT as OBSERVED
from asyncwifi.sync._observed import Measured
from asyncwifi.sync._options import DEFAULTS, FIRST_RUN, SyncOptions, SyncStats
from asyncwifi.sync._plan import SyncPlan, plan_sync
from asyncwifi.sync._snapshots import ContactFeed, changed_hotspots, snapshot

__all__ = ["REPLAN", "SyncOptions", "SyncStats", "Syncer"]

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


class Syncer(Copier):
    """Keeps ``destination`` in step with the organization behind ``api`` (module
    docstring); ``on_plan(plan)`` sees each object plan as it is made anew, ``on_pass(stats)``
    each pass of the daemon once it succeeded."""

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
        super().__init__(api, destination, options=options, on_write=on_write)
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

    # -- the plan --------------------------------------------------------------------------
    async def make_plan(self) -> SyncPlan:
        """The object plan from what is known now (what was measured, the sets' sizes in
        the database); said (the log, ``on_plan``) when it differs from the one in force."""
        measured = await self._measurements()
        contacts, hotspots, segments = [
            await self._retrying(functools.partial(self.destination.count, table), read=True)
            for table in ("contacts", "hotspots", "segments")
        ]
        plan = plan_sync(
            measured.observed(contacts=contacts, hotspots=hotspots, segments=segments),
            allowance=self.api.scheduler.limits.allowance,
            share=self.options.object_share,
            insisted=self.options.insisted,
            defaults=DEFAULTS,
        )
        old = self.plan
        moved = old is None or abs(plan.projection - old.projection) > 0.1 * old.projection
        if moved or old is None or (plan.cadence, plan.warnings) != (old.cadence, old.warnings):
            for line in plan.describe():
                log.log(logging.WARNING if "warning:" in line else logging.INFO, "sync: %s", line)
            if self.on_plan is not None:
                self.on_plan(plan)
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
        await self._write(Write(EVENTS, checkpoints={OBSERVED: measured.encode()}))

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
    @stoppable
    async def sync_events(self, *, follow: bool = False) -> int:
        """Events from the checkpoint (else ``since``) to ``until`` (or now, or forever)."""
        opts = self.options
        plan = self.plan or await self.make_plan()
        checkpoint = await self.checkpoint(EVENTS)
        now = datetime.fromtimestamp(self.api.clock.now(), UTC)
        since = opts.since or (opts.until or now) - FIRST_RUN
        rereads = plan.late in ("reread", "audited")
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
            lookback=plan.lookback if rereads else 0.0,
            audit=plan.audit,
            stored=lambda ids: self._retrying(
                lambda: self.destination.existing(EVENTS, ids), read=True
            ),
        )
        self._feed_seen = (0, 0.0)

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
        now = self.api.clock.now()
        batch, kept = await self._unless_stopped(
            lambda: changed_hotspots(self.api, since=since, param=param, budget=self.budget)
        )
        if not kept:
            log.warning(
                "sync: the server ignores the hotspots' %s filter (older hotspots came back): "
                "each refresh reads the whole list from now on",
                param,
            )
            measured.hotspot_filter = False
        else:
            measured.hotspot_filter = True
            measured.add_hotspot_changes(len(batch.items), now - since)
        batch.checkpoint = repr(now)
        before = self._total()
        await self._apply(batch, HOTSPOTS_REFRESHED)
        await self._flush()
        return self._total() - before

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
        written = await self._quota_safe(self.sync_events)
        written += await self._refresh()
        await self._save_measurements()
        if not plan.observed.known and not self._stopping.is_set():
            await self.make_plan()  # the first pass measured what the plan needs
        self.stats.passes += 1
        self.stats.last_success = self.api.clock.now()
        return written

    async def _refresh(self) -> int:
        written = 0
        for step in (self.sync_contacts, self.sync_hotspots, self.sync_segments):
            if self._stopping.is_set():
                break
            written += await self._quota_safe(step)
        return written

    def _follow(self) -> asyncio.Task[int]:
        return asyncio.create_task(self._quota_safe(lambda: self.sync_events(follow=True)))

    async def run_forever(self) -> None:
        """Follow events and refresh the rest on the plan's cadence until :meth:`stop`."""
        try:
            await self._until_store()
            plan = await self.make_plan()
        except Stopped:
            return
        events = self._follow()
        planned = self.api.clock.now()
        try:
            while not self._stopping.is_set():
                await self._refresh()
                done = not self._stopping.is_set()  # a pass cut short did not succeed
                if done:
                    self.stats.passes += 1
                    self.stats.last_success = self.api.clock.now()
                await self._save_measurements()
                if done and self.on_pass is not None:
                    self.on_pass(self.stats)
                if not plan.observed.known or self.api.clock.now() - planned >= REPLAN:
                    plan, was = await self.make_plan(), plan
                    planned = self.api.clock.now()
                    reads = (plan.late, plan.settle, plan.lookback, plan.poll)
                    if reads != (was.late, was.settle, was.lookback, was.poll):
                        events.cancel()  # the follower goes on from its checkpoint
                        await asyncio.gather(events, return_exceptions=True)
                        events = self._follow()
                await self._sleep(plan.cadence.refresh)
                if events.done():
                    events.result()  # a failure of the event follower ends the daemon
        except Stopped:
            pass  # a stop while the plan read the database: the end
        finally:
            events.cancel()
            await asyncio.gather(events, return_exceptions=True)
            await self.drain()

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
