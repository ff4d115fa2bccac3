"""The durable-mode worker: hands spooled events to the handlers, with retries.

It claims due events from the spool in batches (the claim raises each event's attempt
count durably before a handler sees it), calls the handlers one event at a time in arrival
order, and records the outcomes in the same commit as the next claim. A handler that
raises is retried with exponential backoff; after ``max_attempts`` the event moves to the
dead-letter table. Events whose retry is not yet due do not hold up the others.

Delivery is at least once: if the process dies after a handler returned but before its
outcome was committed, the event is delivered again after the restart with
``context.attempt > 1`` (see :class:`~asyncwifi.webhooks.WebhookContext`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from asyncwifi._retry import RetryPolicy
from asyncwifi.webhooks._receiver import Receiver, Rejection, WebhookContext
from asyncwifi.webhooks._spool import EventOutcome, Spool, SpooledEvent

__all__ = ["HANDLER_RETRY", "Dispatcher"]

_log = logging.getLogger("asyncwifi.webhooks")


#: the dispatcher's default: a handler is retried 7 times, over about 4 minutes
HANDLER_RETRY = RetryPolicy(max_attempts=8, backoff_base=1.0, backoff_max=300.0)


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 1000 else text[:997] + "..."


class Dispatcher:
    """Runs the handlers of a :class:`Receiver` over the events of a :class:`Spool`."""

    def __init__(
        self,
        receiver: Receiver,
        spool: Spool,
        *,
        retry: RetryPolicy | None = None,
        batch_size: int = 64,
        prune_interval: float = 60.0,
        shutdown_grace: float = 10.0,
        poll_interval: float = 5.0,
    ) -> None:
        self.receiver = receiver
        self.spool = spool
        self.retry = retry if retry is not None else HANDLER_RETRY
        self.batch_size = batch_size
        self.prune_interval = prune_interval
        #: real seconds :meth:`stop` lets a running handler finish before cancelling it
        self.shutdown_grace = shutdown_grace
        #: real seconds between looks at the spool when nothing notifies the worker
        self.poll_interval = poll_interval
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        #: events handled, retried and dead-lettered since start (for health checks)
        self.stats = {"handled": 0, "retried": 0, "dead": 0}

    def __repr__(self) -> str:
        running = self._task is not None and not self._task.done()
        return f"Dispatcher(running={running}, stats={self.stats!r})"

    def notify(self) -> None:
        """Wake the worker: an event was spooled (or requeued)."""
        self._wake.set()

    def start(self) -> None:
        """Start the worker task (it first delivers what a previous run left pending)."""
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name="asyncwifi-webhook-dispatcher")

    async def stop(self) -> None:
        """Let the current handler finish and record its outcome, then stop.

        After :attr:`shutdown_grace` real seconds the worker is cancelled; the event in hand is then
        delivered again (``attempt > 1``) at the next start.
        """
        task = self._task
        if task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), self.shutdown_grace)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            self._task = None

    async def _run(self) -> None:
        clock = self.receiver.clock
        outcomes: list[EventOutcome] = []
        last_prune = clock.now()
        while True:
            # Cleared before the claim, so a notify() during the claim is not lost.
            self._wake.clear()
            now = clock.now()
            prune = now - last_prune >= self.prune_interval
            if prune:
                last_prune = now
            try:
                claimed, next_due = await self.spool.settle_and_claim(
                    outcomes, now=now, limit=0 if self._stopping else self.batch_size, prune=prune
                )
            except Exception:
                _log.exception("webhook spool failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                continue
            outcomes = []
            if self._stopping:
                return
            if claimed:
                outcomes = await self._deliver_batch(claimed, now)
                continue
            # Poll now and then too: a requeue from another connection does not notify us.
            timeout = self.poll_interval
            if next_due is not None:
                timeout = min(timeout, clock.real(next_due - clock.now()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _deliver_batch(self, claimed: list[SpooledEvent], now: float) -> list[EventOutcome]:
        outcomes: list[EventOutcome] = []
        try:
            for index, event in enumerate(claimed):
                if self._stopping:
                    # Never handed out: take the claim back, the next run's try is a first.
                    outcomes.extend(EventOutcome(e.id, "unclaimed", now) for e in claimed[index:])
                    break
                outcomes.append(await self._deliver(event))
        except asyncio.CancelledError:
            # Stopped mid-handler: keep what is known. The event in hand stays claimed (its
            # next delivery says attempt > 1); the ones never handed out are taken back.
            rest = [EventOutcome(e.id, "unclaimed", now) for e in claimed[len(outcomes) + 1 :]]
            with contextlib.suppress(Exception):
                await asyncio.shield(self.spool.settle_and_claim(outcomes + rest, now=now, limit=0))
            raise
        return outcomes

    async def _deliver(self, event: SpooledEvent) -> EventOutcome:
        receiver = self.receiver
        clock = receiver.clock
        context = WebhookContext(
            body=event.body,
            headers=event.headers,
            received_at=event.received_at,
            attempt=event.attempt,
            spool_id=event.id,
        )
        payload = receiver.decode(event.body)
        if isinstance(payload, Rejection):
            # Accepted by an earlier version with other models: no retry can help.
            self.stats["dead"] += 1
            return EventOutcome(event.id, "dead", clock.now(), f"undecodable: {payload.message}")
        try:
            await receiver.dispatch(payload, context)
        except Exception as exc:
            _log.warning(
                "webhook handler failed (event %s, type %r, attempt %d): %s",
                event.id,
                event.type,
                event.attempt,
                _describe(exc),
            )
            if event.attempt >= self.retry.max_attempts:
                self.stats["dead"] += 1
                return EventOutcome(event.id, "dead", clock.now(), _describe(exc))
            self.stats["retried"] += 1
            at = clock.now() + self.retry.delay(event.attempt)
            return EventOutcome(event.id, "retry", at, _describe(exc))
        self.stats["handled"] += 1
        return EventOutcome(event.id, "handled", clock.now())
