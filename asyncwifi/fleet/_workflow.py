"""One long-lived Temporal workflow per organization: a run of its sync, a wait, again.

Its id (:func:`workflow_id`) is the lock: Temporal never runs two workflows of one id, so
never two syncs of one organization. Each loop runs the sync activity: for ``run_for`` real
seconds it runs the organization's daemon (it follows events and refreshes the rest on the
plan's cadence, its state kept between polls, heartbeating its counts; ``run_for=0``: one
pass), then the workflow takes stock and waits for the poll interval, the quota's reset or
a backoff (the run says which), or a signal: ``sync_now``, ``pause``, ``resume``;
``configure`` carries new settings (``fleet apply``). A signal that changes what the run in
progress does reaches it as a cancellation, at its next heartbeat: the run ends between two
transactions and says what it did. It continues as new every :data:`PASSES_PER_RUN` runs
(or when Temporal suggests it), carrying its status, so its history stays small. ``status``
is a query (the runs ended); :func:`count_run` adds a run in progress, from its heartbeat.

A run per organization instead of an activity per pass is Temporal's pattern for frequent
polling: a pass costs neither workflow tasks nor history events, and the daemon's set-up
(its plan, its event feed, the lease) is paid once a run, not at every poll
(``docs/benchmarks.md``, Fleet).

This module runs in the workflow sandbox: it imports only ``temporalio`` and the standard
library, and names the activity by its name. What it carries is stored and shown by
Temporal in clear: organization ids, durations and counts, never a key or a secret.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

with workflow.unsafe.imports_passed_through():  # the table: constants, no I/O
    from asyncwifi._defaults import FLEET_RUN, HEARTBEAT_TIMEOUT, POLL_INTERVAL

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
    "count_run",
    "workflow_id",
]

WORKFLOW_NAME = "asyncwifi.organization"
PASS_ACTIVITY = "asyncwifi.sync_pass"
#: runs of the activity before the workflow continues as new (one is a dozen history events)
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
    #: activities (runs) before the workflow continues as new
    passes_per_run: int = PASSES_PER_RUN
    #: real seconds one activity runs the organization's daemon (0: one pass an activity)
    run_for: float = FLEET_RUN


@dataclass
class Settings:
    """What ``configure`` changes in a running workflow (``fleet apply`` sends it)."""

    poll: float
    heartbeat_timeout: float
    run_for: float = FLEET_RUN


@dataclass
class PassRequest:
    """What the sync activity is told: the organization (the worker holds its key), its
    poll interval (None: the worker's ``fleet.toml``) and how long to run (0: one pass)."""

    organization: str
    poll: float | None = None
    run_for: float = 0.0


@dataclass
class PassResult:
    """What a run did (its passes, rows...), or why it could not (``failure``), and how
    long to wait; a running activity heartbeats one too, its counts so far."""

    #: passes that ended in this run (a failed one too)
    passes: int = 1
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
    #: the run was cut short (a signal, the worker stopping): the next may start at once
    interrupted: bool = False


def count_run(status: OrganizationStatus, result: PassResult, at: str) -> None:
    """Add what a run did by ``at`` (ISO 8601) to ``status``: its passes and rows, the
    newest figures it said (a run that could not say one keeps the last), and, when a pass
    of it ended, that pass (one that succeeded clears the last failure). The workflow counts
    each run that ended; ``fleet status`` counts a running one's last heartbeat the same
    way."""
    status.passes += result.passes
    status.rows += result.rows
    status.newest_event = result.newest_event or status.newest_event
    if result.requests_today is not None:
        status.requests_today = result.requests_today
    if result.objects_month is not None:
        status.objects_month = result.objects_month
        status.objects_allowance = result.objects_allowance
    if result.projection is not None:
        status.projection = result.projection
    if result.passes and result.failure is None:
        status.state, status.last_pass, status.last_success = OK, at, at
        status.failure, status.failures, status.last_error = None, 0, None
    elif result.passes:
        status.last_pass = at


@workflow.defn(name=WORKFLOW_NAME)
class OrganizationWorkflow:
    """The organization's sync loop (module docstring)."""

    def __init__(self) -> None:
        self._start = OrganizationInput("")
        self._status = OrganizationStatus(organization="")
        self._paused = False
        self._wake = False
        self._changed = False
        #: a signal asked the run in progress to end (it is cancelled)
        self._interrupt = False

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

    async def _run(self, start: OrganizationInput) -> PassResult:
        """Run the sync activity until it ends or a signal interrupts it (then it is
        cancelled and says what it did: cancelled and waited for, not abandoned)."""
        self._interrupt = False
        running = workflow.start_activity(
            PASS_ACTIVITY,
            PassRequest(start.organization, poll=start.poll, run_for=start.run_for),
            result_type=PassResult,
            start_to_close_timeout=timedelta(seconds=start.run_for) + timedelta(days=1),
            heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=1),
                maximum_interval=timedelta(seconds=max(1.0, start.poll)),
                maximum_attempts=ATTEMPTS,
            ),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        await workflow.wait_condition(lambda: running.done() or self._interrupt)
        if not running.done():
            running.cancel()
        try:
            result: PassResult = await running
            return result
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, CancelledError):  # cancelled before it could say: no count
                return PassResult(passes=0, interrupted=True)
            # an ApplicationError reads "type: message" (its type said once)
            message = str(cause or exc)
            # every attempt went to a worker that stopped answering (killed, frozen: a
            # frozen one's open polls take attempts it cannot run): soon again, elsewhere
            lost = isinstance(cause, ActivityTimeoutError)
            return PassResult(failure=LOST if lost else "error", error=message)

    async def _pass(self, start: OrganizationInput) -> float | None:
        """Run the activity; update the status; the seconds to back off before the next
        run, or None when it succeeded (the next is a poll interval away)."""
        status = self._status
        result = await self._run(start)
        count_run(status, result, _iso(workflow.now()))
        if result.failure is None:  # cut short: the next at once
            return 0.0 if result.interrupted else None
        status.state, status.failure, status.last_error = FAILING, result.failure, result.error
        status.failures += 1
        if result.failure == "quota" and result.retry_after is not None:
            return max(1.0, result.retry_after)  # the reset: nothing can be done before it
        if result.failure == LOST:  # no fault of the organization's: again at once, elsewhere
            return 1.0
        backoff: float = min(MAX_BACKOFF, max(1.0, start.poll) * 2 ** min(status.failures - 1, 16))
        return max(backoff, result.retry_after or 0.0)

    def _cut_short(self) -> None:
        """End the run in progress (a long one: a single pass ends as it would)."""
        if self._start.run_for > 0:
            self._interrupt = True

    @workflow.signal
    def sync_now(self) -> None:
        """Start the next pass now (a run in progress ends at its next heartbeat)."""
        self._wake = True
        self._cut_short()

    @workflow.signal
    def pause(self) -> None:
        """No new pass until ``resume`` (a run in progress ends at its next heartbeat)."""
        self._paused = True
        self._cut_short()

    @workflow.signal
    def resume(self) -> None:
        """Passes again, the next one now."""
        self._paused = False
        self._wake = True

    @workflow.signal
    def configure(self, settings: Settings) -> None:
        """New settings from ``fleet apply`` (a changed ``poll``): the wait in progress is
        measured again; a run in progress whose settings changed ends at its next
        heartbeat, and the next runs with them."""
        was = self._start
        self._start = replace(
            was,
            poll=settings.poll,
            heartbeat_timeout=settings.heartbeat_timeout,
            run_for=settings.run_for,
        )
        self._changed = True
        changed = (was.poll, was.heartbeat_timeout, was.run_for) != (
            settings.poll, settings.heartbeat_timeout, settings.run_for,
        )  # fmt: skip
        if changed and was.run_for > 0:
            self._interrupt = True

    @workflow.query
    def status(self) -> OrganizationStatus:
        """The organization's state, last pass, rows, newest event, requests, objects and
        their projection, last error (as of the last run that ended: ``fleet status``
        adds the one in progress)."""
        return self._status


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")
