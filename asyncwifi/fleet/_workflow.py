"""One long-lived Temporal workflow per organization: a pass, a wait, again.

Its id (:func:`workflow_id`) is the lock: Temporal never runs two workflows of one id, so
never two syncs of one organization. Each loop runs the pass activity (it syncs into the
database; the database's checkpoints are the truth), then waits for the poll interval, the
quota's reset or a backoff (the pass says which), or a signal: ``sync_now``, ``pause``,
``resume``; ``configure`` carries new settings (``fleet apply``). It continues as new
every :data:`PASSES_PER_RUN` passes (or when Temporal suggests it), carrying its status,
so its history stays small. ``status`` is a query.

This module runs in the workflow sandbox: it imports only ``temporalio`` and the standard
library, and names the activity by its name. What it carries is stored and shown by
Temporal in clear: organization ids, durations and counts, never a key or a secret.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

with workflow.unsafe.imports_passed_through():  # the table: constants, no I/O
    from asyncwifi._defaults import HEARTBEAT_TIMEOUT, POLL_INTERVAL

__all__ = [
    "PASSES_PER_RUN",
    "PASS_ACTIVITY",
    "WORKFLOW_NAME",
    "OrganizationInput",
    "OrganizationStatus",
    "OrganizationWorkflow",
    "PassRequest",
    "PassResult",
    "Settings",
    "workflow_id",
]

WORKFLOW_NAME = "asyncwifi.organization"
PASS_ACTIVITY = "asyncwifi.sync_pass"
#: passes before the workflow continues as new (a pass is about a dozen history events)
PASSES_PER_RUN = 100
#: the longest wait between two passes that failed (a revoked key, a database down)
MAX_BACKOFF = 3600.0
#: how many times Temporal runs one pass that raised before the workflow backs off itself
ATTEMPTS = 3

#: the failure of a pass whose every attempt timed out on a worker that stopped answering
LOST = "worker lost"

#: the states a status reports
OK, SYNCING, PAUSED, FAILING, STARTING = "ok", "syncing", "paused", "failing", "starting"


def workflow_id(organization: str) -> str:
    """The workflow id of an organization (the lock: one sync of it at a time)."""
    return f"asyncwifi-org-{organization}"


@dataclass
class OrganizationStatus:
    """What ``status`` answers: no secret, only what an operator reads."""

    organization: str
    state: str = STARTING
    passes: int = 0
    #: when the last pass ended (ISO 8601, UTC), and the last one that succeeded
    last_pass: str | None = None
    last_success: str | None = None
    rows: int = 0
    #: the time of the newest event stored (ISO 8601): the lag is now minus this
    newest_event: str | None = None
    requests_today: int | None = None
    #: objects exchanged this UTC month (spec §8: every kind, the limiter's count), the
    #: month's allowance of every kind (None: not known) and the objects a month the sync's
    #: plan projects (None: no plan yet), as of the last pass that said
    objects_month: int | None = None
    objects_allowance: int | None = None
    projection: int | None = None
    last_error: str | None = None
    #: what the last failure was: "unauthorized", "quota", "database", "worker lost",
    #: "error"
    failure: str | None = None
    failures: int = 0
    next_pass: str | None = None


@dataclass
class OrganizationInput:
    """The workflow's input: the organization and the non-secret timing of its passes."""

    organization: str
    #: seconds between passes
    poll: float = POLL_INTERVAL
    #: seconds without a heartbeat after which Temporal gives the pass to another worker
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT
    #: carried over a continue-as-new
    status: OrganizationStatus | None = None
    paused: bool = False
    #: passes before the workflow continues as new
    passes_per_run: int = PASSES_PER_RUN


@dataclass
class Settings:
    """What ``configure`` changes in a running workflow (``fleet apply`` sends it)."""

    poll: float
    heartbeat_timeout: float


@dataclass
class PassRequest:
    """What the pass activity is told: the organization (the worker holds its key)."""

    organization: str


@dataclass
class PassResult:
    """What a pass did, or why it could not (``failure``), and how long to wait."""

    rows: int = 0
    newest_event: str | None = None
    requests_today: int | None = None
    #: as :class:`OrganizationStatus` says them: plain counts
    objects_month: int | None = None
    objects_allowance: int | None = None
    projection: int | None = None
    #: None: the pass was done; else "unauthorized", "quota", "database"
    failure: str | None = None
    error: str | None = None
    #: real seconds until the next pass may do anything (the quota's reset)
    retry_after: float | None = None


@workflow.defn(name=WORKFLOW_NAME)
class OrganizationWorkflow:
    """The organization's sync loop (module docstring)."""

    def __init__(self) -> None:
        self._start = OrganizationInput("")
        self._status = OrganizationStatus(organization="")
        self._paused = False
        self._wake = False
        self._changed = False

    @workflow.run
    async def run(self, start: OrganizationInput) -> None:
        self._start = start
        status = self._status = start.status or OrganizationStatus(start.organization)
        self._paused = self._paused or start.paused
        for _ in range(start.passes_per_run):
            if self._paused:
                status.state = PAUSED
                await workflow.wait_condition(lambda: not self._paused)
            self._wake = False
            status.state, status.next_pass = SYNCING, None
            backoff = await self._pass(self._start)
            if workflow.info().is_continue_as_new_suggested():
                break
            await self._wait(backoff)
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(replace(self._start, status=status, paused=self._paused))

    async def _wait(self, backoff: float | None) -> None:
        """Until ``backoff`` seconds after now (None: the poll interval, read again after a
        ``configure``), a ``sync_now`` or a ``pause``."""
        begun = workflow.now()
        while True:
            self._changed = False
            due = begun + timedelta(seconds=self._start.poll if backoff is None else backoff)
            left = (due - workflow.now()).total_seconds()
            if left <= 0:
                return
            if not self._paused:
                self._status.next_pass = _iso(due)
            try:
                await workflow.wait_condition(
                    lambda: self._wake or self._paused or self._changed, timeout=left
                )
            except TimeoutError:  # the wait's end: a pass is due
                return
            if not self._changed:
                return

    async def _pass(self, start: OrganizationInput) -> float | None:
        """Run one pass; update the status; the seconds to back off before the next, or
        None when it succeeded (the next is a poll interval away)."""
        status = self._status
        try:
            result: PassResult = await workflow.execute_activity(
                PASS_ACTIVITY,
                PassRequest(start.organization),
                result_type=PassResult,
                start_to_close_timeout=timedelta(days=1),
                heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=1),
                    maximum_interval=timedelta(seconds=max(1.0, start.poll)),
                    maximum_attempts=ATTEMPTS,
                ),
            )
        except ActivityError as exc:
            cause = exc.cause
            # an ApplicationError reads "type: message" (its type said once)
            message = str(cause or exc)
            # every attempt went to a worker that stopped answering (killed, frozen: a
            # frozen one's open polls take attempts it cannot run): soon again, elsewhere
            lost = isinstance(cause, ActivityTimeoutError)
            result = PassResult(failure=LOST if lost else "error", error=message)
        now = _iso(workflow.now())
        status.passes += 1
        status.last_pass = now
        status.rows += result.rows
        status.newest_event = result.newest_event or status.newest_event
        if result.requests_today is not None:
            status.requests_today = result.requests_today
        if result.objects_month is not None:  # a pass that could not say keeps the last
            status.objects_month = result.objects_month
            status.objects_allowance = result.objects_allowance
        if result.projection is not None:
            status.projection = result.projection
        if result.failure is None:
            status.state, status.last_success = OK, now
            status.failure, status.failures, status.last_error = None, 0, None
            return None
        status.state, status.failure, status.last_error = FAILING, result.failure, result.error
        status.failures += 1
        if result.failure == "quota" and result.retry_after is not None:
            return max(1.0, result.retry_after)  # the reset: nothing can be done before it
        if result.failure == LOST:  # no fault of the organization's: again at once, elsewhere
            return 1.0
        backoff: float = min(MAX_BACKOFF, max(1.0, start.poll) * 2 ** min(status.failures - 1, 16))
        return max(backoff, result.retry_after or 0.0)

    @workflow.signal
    def sync_now(self) -> None:
        """Start the next pass now (after the one in progress)."""
        self._wake = True

    @workflow.signal
    def pause(self) -> None:
        """No new pass until ``resume`` (the one in progress ends as it would)."""
        self._paused = True

    @workflow.signal
    def resume(self) -> None:
        """Passes again, the next one now."""
        self._paused = False
        self._wake = True

    @workflow.signal
    def configure(self, settings: Settings) -> None:
        """New settings from ``fleet apply`` (a changed ``poll``): the wait in progress is
        measured again, the next pass runs with them."""
        self._start = replace(
            self._start, poll=settings.poll, heartbeat_timeout=settings.heartbeat_timeout
        )
        self._changed = True

    @workflow.query
    def status(self) -> OrganizationStatus:
        """The organization's state, last pass, rows, newest event, requests, objects and
        their projection, last error."""
        return self._status


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")
