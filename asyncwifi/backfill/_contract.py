"""What the export engine exchanges with its streams and its reporter: the stream it asks
for, the progress it reports, and how a run ended."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from asyncwifi.backfill._plan import Slice
from asyncwifi.backfill._sink import RawRecord
from asyncwifi.backfill._state import SliceState

__all__ = [
    "JobOutcome",
    "OpenStream",
    "PageLike",
    "Progress",
    "Reporter",
    "StreamLike",
    "StreamRequest",
    "remaining_requests",
]


class PageLike(Protocol):
    """What the engine reads of a page: typed items and, aligned, the server's bytes."""

    @property
    def items(self) -> Sequence[Any]: ...

    @property
    def raw_items(self) -> Sequence[RawRecord] | None: ...


class StreamLike(Protocol):
    """A scroll stream: pages, the number of requests it sent, and a way to stop it."""

    def pages(self) -> AsyncIterator[Any]: ...

    @property
    def requests(self) -> int: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class StreamRequest:
    """What the engine asks of a stream factory for one slice."""

    slice: Slice
    #: ``dateStart`` (spec §4.5: inclusive), narrowed on resume when that is safe
    date_start: str
    #: ``dateEnd`` (spec §4.5: inclusive): the slice's end minus one millisecond
    date_end: str
    #: ids this slice already delivered (the client may skip them; the engine does anyway)
    skip_ids: frozenset[str]
    #: whether this stream continues an interrupted one (after a kill or a lapsed scroll)
    resume: bool


OpenStream = Callable[[StreamRequest], StreamLike]


@dataclass(slots=True)
class Progress:
    """A snapshot for progress displays and logs."""

    slices_total: int = 0
    slices_done: int = 0
    #: records committed, over every run of the job
    records: int = 0
    #: records committed by this run
    records_run: int = 0
    pages_run: int = 0
    #: requests sent by this run's streams
    requests_run: int = 0
    #: requests spent on committed work over every run (approximate)
    requests_total: int = 0
    #: duplicates dropped by this run (re-delivered ids)
    duplicates_run: int = 0
    #: resumes the streams made (lapses, and proofs of an ambiguous end; spec §3)
    verifications_run: int = 0
    #: records that did not decode into the SDK's model, written from their raw bytes
    undecoded_run: int = 0
    #: estimate of the requests still needed, once a slice has finished (None before)
    remaining_requests: int | None = None
    #: when this run started, on the job's clock
    started_at: float = 0.0


class Reporter:
    """Receives the engine's progress; the default does nothing. Override what you need."""

    def started(self, progress: Progress, *, resumed: bool) -> None:
        """The job is open (``resumed``: a state file existed)."""

    def page(self, progress: Progress, *, slice_index: int, records: int) -> None:
        """A page was committed."""

    def slice_done(self, progress: Progress, *, slice_index: int) -> None:
        """A slice was completed."""

    def paused(self, progress: Progress, *, reset_at: float, waiting: bool) -> None:
        """The day's quota is spent; ``waiting``: whether the engine sleeps until ``reset_at``."""

    def resumed(self, progress: Progress) -> None:
        """The quota was reset and the job goes on."""

    def finished(self, progress: Progress) -> None:
        """Every slice is complete."""

    def close(self) -> None:
        """Release the display (called by the reporter's owner, whatever the outcome)."""


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How a run ended: ``done``, or ``paused`` until ``reset_at`` (epoch seconds, UTC)."""

    status: Literal["done", "paused"]
    progress: Progress
    reset_at: float | None = None


def remaining_requests(states: Sequence[SliceState]) -> int | None:
    """Requests still needed, extrapolated from the pages per second of range of done slices."""
    done = [s for s in states if s.done]
    if not done:
        return None
    span = sum((s.end - s.start).total_seconds() for s in done)
    pages = sum(s.pages + 1 for s in done)
    if span <= 0:
        return None
    rate = pages / span
    left = 0.0
    for s in states:
        if not s.done:
            left += max(1.0, rate * (s.end - s.start).total_seconds() - s.pages)
    return round(left)
