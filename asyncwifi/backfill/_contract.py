"""What an export job tells its reporter: the progress, and how a run ended."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["JobOutcome", "Progress", "Reporter"]


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
    #: records dropped by this run as already written (a resumed scan, a repeating server)
    duplicates_run: int = 0
    #: records that did not decode into the SDK's model, written from their raw bytes
    undecoded_run: int = 0
    #: estimate of the requests still needed, once a part has finished (None before)
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

    async def watch(self) -> None:
        """Run beside the job by the reporter's owner (cancelled at its end): a reporter
        that says why a job is quiet (a rate-limit wait) does it here; the default returns."""


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How a run ended: ``done``, or ``paused`` until ``reset_at`` (epoch seconds, UTC)."""

    status: Literal["done", "paused"]
    progress: Progress
    reset_at: float | None = None
