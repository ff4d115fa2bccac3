"""The export job: the engine's feeds into a JSON Lines destination, part by part.

A job is a few *parts* (the slices of a backfill, the one scan of a contact export), each an
engine feed (:class:`~asyncwifi.engine.EventFeed`, :class:`~asyncwifi.engine.ContactFeed`)
resumed from its checkpoint, written by the engine's copy loop
(:meth:`~asyncwifi.engine.Copier.copy`: a batch and its checkpoint in one transaction) into
the output and its state (``JsonlDestination``). Parts run ``concurrency`` at a time and
share commits; a finished part's checkpoint says ``done``.

A scroll that cannot go on (``ScrollExpiredError``) is opened again from the part's
checkpoint, at most ``MAX_EXPIRIES`` times in a row without a committed record, then the
job fails loudly (:class:`SliceIncompleteError`). When the day's quota is spent
(``QuotaExhaustedError``, the client configured to raise) everything committed stays
committed; the job sleeps until the reset (``wait=True``) or returns ``paused``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asyncwifi._client import Client
from asyncwifi.backfill._contract import JobOutcome, Progress, Reporter
from asyncwifi.backfill._errors import SliceIncompleteError
from asyncwifi.engine import Batch, Copier, CopyOptions, JsonlDestination, PiiPolicy, Write
from asyncwifi.errors import ConfigurationError, QuotaExhaustedError, ScrollExpiredError

__all__ = ["ExportJob", "Opened", "Part"]

#: a scroll that lapses this many times in a row without committing anything is an error
MAX_EXPIRIES = 5
#: clock seconds added to a quota reset before trying again (the counters are approximate)
RESET_MARGIN = 1.0

#: a part's feed, opened from its checkpoint: its batches, and the requests it spent so far
Opened = tuple[AsyncIterator[Batch[Any]], Callable[[], int]]


@dataclass(frozen=True, slots=True)
class Part:
    """One resumable piece of a job: ``open(checkpoint)`` gives its feed; ``span`` is its
    length in seconds of range (for the estimate of what is left; 0: not timed)."""

    index: int
    describe: str
    open: Callable[[str | None], Opened]
    span: float = 0.0


class ExportJob:
    """One resumable export: parts streamed through the engine's copy loop into
    ``destination``."""

    def __init__(
        self,
        api: Client,
        destination: JsonlDestination,
        parts: Sequence[Part],
        *,
        reporter: Reporter | None = None,
        concurrency: int = 1,
        wait: bool = False,
        max_wait: float | None = None,
        pii: PiiPolicy | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError("concurrency must be at least 1")
        self.api = api
        self.clock = api.clock
        self.destination = destination
        self.parts = list(parts)
        self.reporter = reporter or Reporter()
        self.concurrency = concurrency
        self.wait = wait
        self.max_wait = max_wait
        self.progress = Progress()
        # ``pii``: every line under the PII policy (issue 41; ``engine._pii``)
        # at most one page more in memory than the parts streaming at once (``engine._room``):
        # the job's memory is set by its concurrency, not by the events it moves
        options = CopyOptions(pii=pii, pages_in_memory=concurrency + 1)
        self._copier = Copier(api, destination, options=options, on_write=self._written)
        #: each write in flight, oldest first: its part, and whether it carries a page of
        #: records (a span's completion is a checkpoint alone: no page)
        self._writing: deque[tuple[int, bool]] = deque()
        #: requests each part spent in this run, and the parts finished
        self._spent: dict[int, int] = {}
        self._done: set[int] = set()

    @property
    def out_path(self) -> Path:
        """The output file."""
        return self.destination.out

    @property
    def state_path(self) -> Path:
        """The state file."""
        return self.destination.path

    async def run(self) -> JobOutcome:
        """Run until every part is done, or until the quota pauses the job (see ``wait``)."""
        destination = self.destination
        await destination.open()
        try:
            for part in self.parts:
                if (
                    await destination.checkpoint(destination.params.part(part.index))
                    == destination.DONE
                ):
                    self._done.add(part.index)
            self.progress = Progress(
                slices_total=len(self.parts),
                slices_done=len(self._done),
                records=destination.records,
                requests_total=destination.requests,
                started_at=self.clock.now(),
            )
            self.reporter.started(self.progress, resumed=destination.resumed)
            while True:
                reset_at = await self._round()
                if reset_at is None:
                    await destination.mark_done()
                    self._update()
                    self.reporter.finished(self.progress)
                    return JobOutcome("done", self.progress)
                delay = reset_at - self.clock.now()
                waiting = self.wait and (self.max_wait is None or delay <= self.max_wait)
                self._update()
                self.reporter.paused(self.progress, reset_at=reset_at, waiting=waiting)
                if not waiting:
                    return JobOutcome("paused", self.progress, reset_at)
                await self.clock.sleep(max(0.0, delay) + RESET_MARGIN)
                self.reporter.resumed(self.progress)
        finally:
            await self._copier.drain()
            await destination.close()

    async def _round(self) -> float | None:
        """Stream every unfinished part; the quota's reset time if it ran out, else None."""
        pending = deque(p for p in self.parts if p.index not in self._done)
        resets: list[float] = []

        async def worker() -> None:
            # a spent quota stops this worker only: the others commit what they fetched
            while pending and not resets:
                try:
                    await self._run_part(pending.popleft())
                except QuotaExhaustedError as exc:
                    resets.append(exc.reset_at)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.concurrency, len(pending))):
                group.create_task(worker())
        return max(resets) if resets else None

    async def _run_part(self, part: Part) -> None:
        name = self.destination.params.part(part.index)
        expiries = 0
        while True:
            batches, spent = part.open(await self._copier.checkpoint(name))
            before = self.progress.records
            try:
                await self._copier.copy(
                    batches,
                    name,
                    lambda b: self._writing.append((part.index, bool(b.items or b.bad))),
                )
                break
            except ScrollExpiredError as exc:
                # everything delivered is committed; open the part again from there
                expiries = 1 if self.progress.records > before else expiries + 1
                if expiries >= MAX_EXPIRIES:
                    raise SliceIncompleteError(
                        f"{part.describe} cannot be proved complete: {exc} (what it "
                        "delivered is saved; run again to resume)"
                    ) from exc
            finally:
                self._spent[part.index] = self._spent.get(part.index, 0) + spent()
                self._update()
        await self.destination.write(Write("events", checkpoints={name: self.destination.DONE}))
        self._done.add(part.index)
        self._update()
        self.reporter.slice_done(self.progress, slice_index=part.index)

    def _written(self, table: str, rows: int) -> None:
        """A batch committed (writes of one commit report one by one, in their order)."""
        index, page = self._writing.popleft() if self._writing else (-1, rows > 0)
        progress = self.progress
        progress.records += rows
        progress.records_run += rows
        self._update()
        if page:  # what the progress calls pages: those that carried records
            progress.pages_run += 1
            self.reporter.page(progress, slice_index=index, records=rows)

    def _update(self) -> None:
        """The progress figures, read from the engine and the destination."""
        progress, stats, destination = self.progress, self._copier.stats, self.destination
        progress.requests_run = max(sum(self._spent.values()), sum(stats.requests.values()))
        progress.requests_total = destination.requests
        progress.duplicates_run = destination.repeats
        progress.undecoded_run = stats.dead_letters
        progress.slices_done = len(self._done)
        progress.remaining_requests = self._remaining()

    def _remaining(self) -> int | None:
        """Requests still needed, from the requests per second of range of done parts."""
        done = [p for p in self.parts if p.index in self._done and p.index in self._spent]
        span = sum(p.span for p in done)
        if not done or span <= 0:
            return None
        rate = sum(self._spent[p.index] for p in done) / span
        left = (p for p in self.parts if p.index not in self._done)
        return round(sum(max(1.0, rate * p.span - self._spent.get(p.index, 0)) for p in left))
