"""The organization workflow on a real Temporal dev server, with a scripted pass: a pass,
then a wait for the poll interval, a backoff or the quota's reset; the signals ``sync_now``,
``pause`` and ``resume``; the ``status`` query; continue-as-new carrying the status; and the
default sandbox accepting the workflow module as it is."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("temporalio")

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from asyncwifi.fleet._control import fleet_status
from asyncwifi.fleet._worker import workflow_runner
from asyncwifi.fleet._workflow import (
    PASS_ACTIVITY,
    OrganizationInput,
    OrganizationStatus,
    OrganizationWorkflow,
    PassRequest,
    PassResult,
    Settings,
    workflow_id,
)


class Script:
    """A pass activity whose results a test decides; it records when each pass ran."""

    def __init__(self, results: Callable[[int], PassResult] | None = None) -> None:
        self.calls: list[float] = []
        self.results = results or (lambda n: PassResult(rows=1, requests_today=n))

    @activity.defn(name=PASS_ACTIVITY)
    async def sync_pass(self, request: PassRequest) -> PassResult:
        self.calls.append(time.monotonic())
        return self.results(len(self.calls))


@asynccontextmanager
async def running(
    temporal: Any, task_queue: str, script: Script | LongRun, runner: Any = None, **options: Any
) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    org = f"org-{uuid.uuid4().hex[:8]}"
    async with Worker(
        temporal,
        task_queue=task_queue,
        workflows=[OrganizationWorkflow],
        activities=[script.sync_pass],
        workflow_runner=runner or workflow_runner(),
    ):
        handle = await temporal.start_workflow(
            OrganizationWorkflow.run,
            OrganizationInput(org, **options),
            id=workflow_id(org),
            task_queue=task_queue,
        )
        try:
            yield handle
        finally:
            await handle.terminate()


async def status_of(handle: WorkflowHandle[Any, Any]) -> OrganizationStatus:
    return await handle.query(OrganizationWorkflow.status)


async def until(check: Callable[[], Any], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_passes_wait_the_poll_interval_and_status_says_what_they_did(
    temporal: Any, task_queue: str
) -> None:
    script = Script()
    async with running(temporal, task_queue, script, poll=1.0) as handle:

        async def three() -> bool:
            return (await status_of(handle)).passes >= 3

        await until(three)
        status = await status_of(handle)
        assert status.state in ("ok", "syncing")
        assert status.rows >= 3
        assert status.requests_today is not None
        assert status.last_success is not None
        assert status.last_error is None
        gaps = [b - a for a, b in zip(script.calls, script.calls[1:], strict=False)]
        assert all(gap >= 0.9 for gap in gaps), gaps  # the poll interval, not a hot loop


async def test_sync_now_pause_and_resume(temporal: Any, task_queue: str) -> None:
    script = Script()
    async with running(temporal, task_queue, script, poll=3600.0) as handle:
        await until(lambda: _const(len(script.calls) == 1))
        await handle.signal(OrganizationWorkflow.sync_now)
        await until(lambda: _const(len(script.calls) == 2))
        await handle.signal(OrganizationWorkflow.pause)

        async def paused() -> bool:
            return (await status_of(handle)).state == "paused"

        await handle.signal(OrganizationWorkflow.sync_now)  # woken: it pauses instead
        await until(paused)
        await asyncio.sleep(0.5)
        assert len(script.calls) == 2  # no pass while paused
        await handle.signal(OrganizationWorkflow.resume)
        await until(lambda: _const(len(script.calls) == 3))

        async def three_passes() -> bool:  # the third's result handled by the workflow
            return (await status_of(handle)).passes == 3

        await until(three_passes)
        assert len(script.calls) == 3


async def test_configure_reaches_the_wait_in_progress(temporal: Any, task_queue: str) -> None:
    script = Script()
    async with running(temporal, task_queue, script, poll=3600.0) as handle:
        await until(lambda: _const(len(script.calls) == 1))
        await until(lambda: _next_pass_set(handle))
        waiting = await status_of(handle)
        await handle.signal(OrganizationWorkflow.configure, Settings(poll=1.0, heartbeat_timeout=5))
        await until(lambda: _const(len(script.calls) == 3))  # every second now, not hourly
        assert (await status_of(handle)).next_pass != waiting.next_pass
        gaps = [b - a for a, b in zip(script.calls[1:], script.calls[2:], strict=False)]
        assert all(gap >= 0.9 for gap in gaps), gaps


async def _next_pass_set(handle: WorkflowHandle[Any, Any]) -> bool:
    return (await status_of(handle)).next_pass is not None


async def _const(value: bool) -> bool:
    return value


async def test_a_refused_key_backs_off_and_the_status_says_so(
    temporal: Any, task_queue: str
) -> None:
    script = Script(lambda n: PassResult(failure="unauthorized", error="401: invalid key"))
    async with running(temporal, task_queue, script, poll=1.0) as handle:
        await until(lambda: _const(len(script.calls) >= 3))
        status = await status_of(handle)
        assert status.failure == "unauthorized"
        assert status.last_error == "401: invalid key"
        assert status.last_success is None
        gaps = [b - a for a, b in zip(script.calls, script.calls[1:], strict=False)]
        assert gaps[0] >= 0.9, gaps
        assert gaps[1] >= 1.8, gaps  # doubling: 1 s, 2 s (no hot loop)


async def test_a_spent_day_waits_for_its_reset(temporal: Any, task_queue: str) -> None:
    script = Script(
        lambda n: (
            PassResult(failure="quota", error="spent", retry_after=2.0)
            if n == 1
            else PassResult(rows=5)
        )
    )
    async with running(temporal, task_queue, script, poll=0.2) as handle:
        await until(lambda: _const(len(script.calls) >= 2))
        assert script.calls[1] - script.calls[0] >= 1.9  # the reset, not the poll

        # the second pass has started; its result reaches the status when the workflow
        # has handled it (a loaded CI read the status in between: 'quota' still)
        async def second_pass_done() -> bool:
            return (await status_of(handle)).passes >= 2

        await until(second_pass_done)
        status = await status_of(handle)
        assert status.state in ("ok", "syncing")
        assert status.failure is None


async def test_a_pass_that_raises_is_retried_then_reported(temporal: Any, task_queue: str) -> None:
    def boom(n: int) -> PassResult:
        raise RuntimeError(f"broken pass {n}")

    script = Script(boom)
    async with running(temporal, task_queue, script, poll=30.0) as handle:

        async def failing() -> bool:
            return (await status_of(handle)).failure == "error"

        await until(failing)
        status = await status_of(handle)
        assert len(script.calls) == 3  # Temporal's attempts, then the workflow's backoff
        assert "broken pass 3" in (status.last_error or "")


async def test_continue_as_new_carries_the_status(temporal: Any, task_queue: str) -> None:
    script = Script()
    async with running(temporal, task_queue, script, poll=0.1, passes_per_run=3) as handle:

        async def seven() -> bool:
            return (await status_of(handle)).passes >= 7

        await until(seven)
        current = temporal.get_workflow_handle(handle.id)
        assert (await current.describe()).run_id != handle.first_execution_run_id
        history = await current.fetch_history()
        assert len(history.events) < 60  # a run holds at most 3 passes
        assert (await status_of(handle)).rows >= 7  # carried over from the earlier runs


async def test_the_default_sandbox_accepts_the_workflow_module(
    temporal: Any, task_queue: str
) -> None:
    script = Script()
    async with running(temporal, task_queue, script, runner=SandboxedWorkflowRunner(), poll=60.0):
        await until(lambda: _const(len(script.calls) == 1))


#: a run of ten minutes and an hourly poll; a heartbeat timeout of 1 s (one each 0.8 s)
LONG: dict[str, Any] = {"poll": 3600.0, "run_for": 600.0, "heartbeat_timeout": 1.0}


class LongRun:
    """A sync activity that runs as the worker's does: a pass every 0.1 s, heartbeating its
    counts, until ``run_for`` or a cancellation (then it says what it did)."""

    def __init__(self) -> None:
        self.requests: list[PassRequest] = []
        self.cancelled = 0

    @activity.defn(name=PASS_ACTIVITY)
    async def sync_pass(self, request: PassRequest) -> PassResult:
        self.requests.append(request)
        passes, begun = 0, time.monotonic()
        try:
            while time.monotonic() - begun < request.run_for:
                await asyncio.sleep(0.1)
                passes += 1
                activity.heartbeat(PassResult(passes=passes, rows=passes))
        except asyncio.CancelledError:
            self.cancelled += 1
            return PassResult(passes=passes, rows=passes, interrupted=True)
        return PassResult(passes=passes, rows=passes)


async def live_status(temporal: Any, handle: WorkflowHandle[Any, Any]) -> OrganizationStatus:
    """What ``fleet status`` says of this organization: its runs ended and the one going."""
    (found,) = [s for s in await fleet_status(temporal) if workflow_id(s.organization) == handle.id]
    return found


async def scheduled(handle: WorkflowHandle[Any, Any]) -> int:
    """How many activities the workflow's history has scheduled (its runs)."""
    history = await handle.fetch_history()
    return sum(1 for e in history.events if e.HasField("activity_task_scheduled_event_attributes"))


async def test_a_run_is_one_activity_and_status_counts_its_passes_as_they_end(
    temporal: Any, task_queue: str
) -> None:
    script = LongRun()
    async with running(temporal, task_queue, script, **LONG) as handle:

        async def passes_seen() -> bool:  # heartbeats: at most one each 0.8 s here
            status = await live_status(temporal, handle)
            return status.passes >= 10 and status.state == "ok"

        await until(passes_seen)
        status = await live_status(temporal, handle)
        assert status.last_success is not None
        assert status.rows == status.passes
        assert (await status_of(handle)).passes == 0  # the workflow itself counts runs ended
        assert len(script.requests) == 1
        assert await scheduled(handle) == 1
        assert script.requests[0].run_for == 600.0
        assert script.requests[0].poll == 3600.0


async def test_sync_now_and_pause_cut_a_run_short_and_keep_its_counts(
    temporal: Any, task_queue: str
) -> None:
    script = LongRun()
    async with running(temporal, task_queue, script, **LONG) as handle:
        await until(lambda: _const(len(script.requests) == 1))
        await asyncio.sleep(0.5)
        begun = time.monotonic()
        await handle.signal(OrganizationWorkflow.sync_now)  # at its next heartbeat
        await until(lambda: _const(len(script.requests) == 2), 10)
        assert time.monotonic() - begun < 5.0
        assert script.cancelled == 1

        async def first_run_counted() -> bool:
            return (await status_of(handle)).passes >= 3  # its passes, said as it ended

        await until(first_run_counted)
        await handle.signal(OrganizationWorkflow.pause)

        async def paused() -> bool:
            return (await status_of(handle)).state == "paused"

        await until(paused, 10)
        assert script.cancelled == 2
        await asyncio.sleep(1.0)
        assert len(script.requests) == 2  # no run while paused
        await handle.signal(OrganizationWorkflow.resume)
        await until(lambda: _const(len(script.requests) == 3), 10)


async def test_configure_cuts_a_run_short_only_when_a_setting_changes(
    temporal: Any, task_queue: str
) -> None:
    script = LongRun()
    async with running(temporal, task_queue, script, **LONG) as handle:
        await until(lambda: _const(len(script.requests) == 1))
        same = Settings(poll=3600.0, heartbeat_timeout=1.0, run_for=600.0)
        await handle.signal(OrganizationWorkflow.configure, same)
        await asyncio.sleep(2.0)  # more than two heartbeats: a cancellation would be seen
        assert script.cancelled == 0
        assert len(script.requests) == 1
        changed = Settings(poll=30.0, heartbeat_timeout=1.0, run_for=600.0)
        await handle.signal(OrganizationWorkflow.configure, changed)
        await until(lambda: _const(len(script.requests) == 2), 10)
        assert script.cancelled == 1
        assert script.requests[1].poll == 30.0  # the next run has the new settings


async def test_a_run_that_ends_is_followed_after_the_poll_interval(
    temporal: Any, task_queue: str
) -> None:
    script = LongRun()
    async with running(
        temporal, task_queue, script, poll=1.0, run_for=0.5, heartbeat_timeout=1.0
    ) as handle:
        await until(lambda: _const(len(script.requests) >= 3))
        assert script.cancelled == 0
        assert await scheduled(handle) >= 3
        status = await status_of(handle)
        assert status.passes >= 4
        assert status.failure is None
