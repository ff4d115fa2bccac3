"""What the command shows while it works: a live display, plain lines, or JSON lines.

- on a terminal: a rich progress bar over the slices with records, pages, requests used,
  objects exchanged (spec §8, and what is left of the month's allowance), quota left and an
  ETA computed from the quota;
- not on a terminal: one line per finished slice, pause and end;
- ``--log-format json``: one JSON object per line (``ts``, ``level``, ``event``, fields),
  for daemons and log shippers;
- ``--quiet``: nothing but warnings and errors.

Everything goes to stderr; stdout is left to data (``hotspots list`` and friends).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any, Literal

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from asyncwifi._clock import Clock
from asyncwifi._instant import format_instant, human_duration
from asyncwifi.backfill import Progress, Reporter, requests_time
from asyncwifi.cli._objects import left_for
from asyncwifi.ratelimit import QuotaSnapshot

__all__ = ["Display", "LogFormat", "eta_seconds"]

LogFormat = Literal["text", "json"]


def eta_seconds(progress: Progress, quota: QuotaSnapshot | None, now: float) -> float | None:
    """Seconds until the job should finish: the requests it still needs, sent at the minute
    limit, waiting for each daily reset from what is left of today's quota."""
    if progress.remaining_requests is None or quota is None:
        return None
    minute, day = quota.limits.minute, quota.limits.day
    day_snap = quota.day
    return requests_time(
        progress.remaining_requests,
        minute_count=minute.count if minute else 1_000_000,
        minute_period=minute.period if minute else 60.0,
        day_count=day.count if day else 1_000_000_000,
        day_period=day.period if day else 86_400.0,
        day_remaining=day_snap.remaining if day_snap else None,
        day_reset_in=(day_snap.reset_at - now) if day_snap and day_snap.reset_at else None,
    )


def requests_sent(progress: Progress, quota: QuotaSnapshot | None) -> int:
    """Every request this run sent, logins and retries included: the limiter's count (it
    admits each one; the job's own count leaves the login out). The one count every line
    of a run shows, the last one included."""
    return quota.admitted if quota is not None and quota.admitted else progress.requests_run


def eta_or_rate(progress: Progress, quota: QuotaSnapshot | None, now: float) -> float | None:
    """:func:`eta_seconds`, else (no estimate of the requests left yet) the slices' rate
    so far: the time per slice done times the slices left, as soon as one is done."""
    eta = eta_seconds(progress, quota, now)
    if eta is not None:
        return eta
    done, total = progress.slices_done, progress.slices_total
    if 0 < done < total and now > progress.started_at:
        return (now - progress.started_at) / done * (total - done)
    return None


#: real seconds without a committed page before a reporter says why the run waits
QUIET_WAIT = 2.0


def wait_reason(quota: QuotaSnapshot | None, now: float, clock: Clock) -> str | None:
    """Why the limiter holds requests back now, and for how long (real time), or None."""
    if quota is None:
        return None
    if quota.paused_until is not None and quota.paused_until > now:
        left = human_duration(clock.real(quota.paused_until - now))
        return f"the server's 429 (too many requests): requests resume in {left}"
    minute = quota.minute
    if minute is not None and minute.remaining == 0 and (minute.reset_at or 0.0) > now:
        left = human_duration(clock.real((minute.reset_at or now) - now))
        return f"the rate limit ({minute.limit} requests a minute, all used): the next in {left}"
    return None


class _Waits:
    """Says once why a run has committed nothing for :data:`QUIET_WAIT` real seconds."""

    def __init__(
        self, display: Display, quota: Callable[[], QuotaSnapshot | None], clock: Clock
    ) -> None:
        self.display, self.quota, self.clock = display, quota, clock
        self.last = time.monotonic()
        self.said = False

    def active(self) -> None:
        self.last, self.said = time.monotonic(), False

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(QUIET_WAIT / 4)
            if self.said or time.monotonic() - self.last < QUIET_WAIT:
                continue
            reason = wait_reason(self.quota(), self.clock.now(), self.clock)
            if reason is not None:
                self.display.info("waiting", f"waiting for {reason}", reason=reason)
                self.said = True


def _quota_left(quota: QuotaSnapshot | None) -> int | None:
    day = quota.day if quota is not None else None
    return day.remaining if day is not None else None


def _spent_quota(quota: QuotaSnapshot | None) -> str:
    """Which quota a pause waits for: the month's object allowance once the limiter's count
    reached it, else the day's requests."""
    volume = quota.volume if quota is not None else None
    if volume is not None and any(volume.remaining(k) == 0 for k in volume.allowance):
        return "month"
    return "day"


_SPENT = {"day": "the day's quota", "month": "the month's object allowance"}


class _RunObjects:
    """The objects this run exchanged, read from the limiter (no counter of its own): the
    month's count now less what it was when the run began (the command reads it from the
    store before the job starts); in a new month, what the run spent in the last one plus
    the new month's count. With a shared store the month's count is every process's."""

    __slots__ = ("base", "carried", "last", "month")

    def __init__(self, start: QuotaSnapshot | None) -> None:
        volume = start.volume if start is not None else None
        self.month = volume.month if volume is not None else ""
        self.base = volume.used if volume is not None else 0
        self.carried = self.last = 0

    def read(self, quota: QuotaSnapshot | None) -> int:
        if quota is None:
            return self.last
        volume = quota.volume
        if volume.month != self.month:  # the 1st, 00:00 UTC: the month's count starts over
            self.month, self.base, self.carried = volume.month, 0, self.last
        self.last = self.carried + max(0, volume.used - self.base)
        return self.last


class Display:
    """The command's voice: messages, warnings and a progress reporter, in one format."""

    def __init__(
        self,
        *,
        quiet: bool = False,
        log_format: LogFormat = "text",
        stream: IO[str] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.quiet = quiet
        self.log_format = log_format
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock

    def _ts(self) -> str:
        return format_instant(self.clock.now() if self.clock is not None else time.time())

    def emit(self, level: str, event: str, message: str, **fields: Any) -> None:
        """One message; in JSON mode with ``fields``. ``info`` is dropped when quiet."""
        if level == "info" and self.quiet:
            return
        if self.log_format == "json":
            record = {"ts": self._ts(), "level": level, "event": event, "message": message}
            record.update(fields)
            self.stream.write(json.dumps(record, default=str) + "\n")
        else:
            prefix = "" if level == "info" else f"asyncwifi: {level}: "
            self.stream.write(prefix + message + "\n")
        self.stream.flush()

    def info(self, event: str, message: str, **fields: Any) -> None:
        self.emit("info", event, message, **fields)

    def warning(self, event: str, message: str, **fields: Any) -> None:
        self.emit("warning", event, message, **fields)

    def reporter(
        self, *, noun: str, quota: Callable[[], QuotaSnapshot | None], clock: Clock
    ) -> Reporter:
        """A reporter for an export of ``noun`` (``events``, ``contacts``: the kind of its
        objects too); the run's objects count from the limiter's month at this call."""
        self.clock = clock
        if self.log_format == "json":
            return _JsonReporter(self, noun, quota, clock)
        live = not self.quiet and self.stream.isatty()
        return _TextReporter(self, noun, quota, clock, live=live)


def _fields(
    progress: Progress, quota: QuotaSnapshot | None, clock: Clock, objects: int, kind: str
) -> dict[str, Any]:
    eta = eta_or_rate(progress, quota, clock.now())
    volume = quota.volume if quota is not None else None
    return {
        "slices_done": progress.slices_done,
        "slices_total": progress.slices_total,
        "records": progress.records,
        "records_run": progress.records_run,
        "pages_run": progress.pages_run,
        "requests_run": requests_sent(progress, quota),
        "requests_total": progress.requests_total,
        "duplicates_dropped": progress.duplicates_run,
        "objects_run": objects,
        "objects_month": volume.used if volume is not None else None,
        # without a shared store the month's count is this process's: what is left, at most
        "objects_month_shared": quota is not None and quota.store == "redis",
        "objects_left_month": left_for(volume, kind) if volume is not None else None,
        "quota_day_remaining": _quota_left(quota),
        # real seconds (a simulated clock runs faster)
        "eta_seconds": None if eta is None else round(clock.real(eta), 3),
    }


class _JsonReporter(Reporter):
    def __init__(
        self,
        display: Display,
        noun: str,
        quota: Callable[[], QuotaSnapshot | None],
        clock: Clock,
    ) -> None:
        self.display = display
        self.noun = noun
        self.quota = quota
        self.clock = clock
        self._objects = _RunObjects(quota())
        self._waits = _Waits(display, quota, clock)

    async def watch(self) -> None:
        await self._waits.watch()

    def _emit(self, level: str, event: str, message: str, progress: Progress, **extra: Any) -> None:
        quota = self.quota()
        objects = self._objects.read(quota)
        self._waits.active()
        fields = _fields(progress, quota, self.clock, objects, self.noun)
        fields.update(extra)
        self.display.emit(level, event, message, **fields)

    def started(self, progress: Progress, *, resumed: bool) -> None:
        self._emit(
            "info", "started", "resuming" if resumed else "starting", progress, resumed=resumed
        )

    def page(self, progress: Progress, *, slice_index: int, records: int) -> None:
        self._emit(
            "info", "page", "page committed", progress, slice=slice_index, page_records=records
        )

    def slice_done(self, progress: Progress, *, slice_index: int) -> None:
        self._emit("info", "slice_done", f"slice {slice_index} done", progress, slice=slice_index)

    def paused(self, progress: Progress, *, reset_at: float, waiting: bool) -> None:
        verb = "waiting for" if waiting else "resume after"
        spent = _spent_quota(self.quota())
        self._emit(
            "warning",
            "quota_exhausted",
            f"{_SPENT[spent]} is spent; {verb} the reset at {format_instant(reset_at, 'seconds')}",
            progress,
            reset_at=format_instant(reset_at, "seconds"),
            waiting=waiting,
            quota=spent,
        )

    def resumed(self, progress: Progress) -> None:
        self._emit("info", "resumed", "quota reset; resuming", progress)

    def finished(self, progress: Progress) -> None:
        self._emit("info", "finished", "done", progress)


class _TextReporter(Reporter):
    def __init__(
        self,
        display: Display,
        noun: str,
        quota: Callable[[], QuotaSnapshot | None],
        clock: Clock,
        *,
        live: bool,
    ) -> None:
        self.display = display
        self.noun = noun
        self.quota = quota
        self.clock = clock
        self._objects = _RunObjects(quota())
        self._waits = _Waits(display, quota, clock)
        self._bar: RichProgress | None = None
        self._live: Live | None = None
        self._text = Text()
        self._task: Any = None
        if live:
            # two lines: the bar over the slices, then the figures (they need the width)
            console = Console(file=display.stream)
            self._bar = RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(bar_width=30),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
            )
            self._live = Live(Group(self._bar, self._text), console=console, refresh_per_second=8)

    def _stats(self, progress: Progress) -> str:
        quota = self.quota()
        left = _quota_left(quota)
        eta = eta_or_rate(progress, quota, self.clock.now())
        # in real seconds: a simulated clock runs faster than the reader's
        eta = None if eta is None else self.clock.real(eta)
        objects = self._objects.read(quota)
        month = left_for(quota.volume, self.noun) if quota is not None else None
        # without a shared store, others' objects this month are not known: at most this
        bound = "" if quota is not None and quota.store == "redis" else "at most "
        month_left = "" if month is None else f" ({bound}{month:,} left this month)"
        return (
            f"{progress.records:,} {self.noun} · {progress.pages_run:,} pages · "
            f"{requests_sent(progress, quota):,} requests · "
            f"{objects:,} objects{month_left} · quota left "
            f"{'?' if left is None else f'{left:,}'} · ETA {human_duration(eta)}"
        )

    async def watch(self) -> None:
        await self._waits.watch()

    def _update(self, progress: Progress) -> None:
        self._waits.active()
        if self._bar is not None:
            self._bar.update(self._task, completed=progress.slices_done)
            self._text.plain = self._stats(progress)

    def started(self, progress: Progress, *, resumed: bool) -> None:
        if self._bar is not None and self._live is not None:
            self._task = self._bar.add_task("slices", total=progress.slices_total)
            self._update(progress)
            self._live.start()
        if resumed:
            self.display.info(
                "started",
                f"resuming: {progress.slices_done}/{progress.slices_total} slices and "
                f"{progress.records:,} {self.noun} already written",
            )

    def page(self, progress: Progress, *, slice_index: int, records: int) -> None:
        self._update(progress)

    def slice_done(self, progress: Progress, *, slice_index: int) -> None:
        self._update(progress)
        if self._bar is None and progress.slices_total > 1:
            self.display.info(
                "slice_done",
                f"slice {progress.slices_done}/{progress.slices_total} · {self._stats(progress)}",
            )

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def paused(self, progress: Progress, *, reset_at: float, waiting: bool) -> None:
        self._update(progress)
        if not waiting:
            self._stop()
        what = "waiting until" if waiting else "run the same command again after"
        self.display.warning(
            "quota_exhausted",
            f"{_SPENT[_spent_quota(self.quota())]} is spent; progress is saved "
            f"({progress.records:,} {self.noun}); "
            f"{what} {format_instant(reset_at, 'seconds')} to resume",
        )

    def resumed(self, progress: Progress) -> None:
        self.display.info("resumed", "quota reset; resuming")

    def finished(self, progress: Progress) -> None:
        self._update(progress)
        self._stop()

    def close(self) -> None:
        self._stop()
