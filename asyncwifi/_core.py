"""The request pipeline every resource uses: send once, interpret once, one retry policy.

An attempt acquires a scheduler slot, sends, parses the rate-limit headers once (fed to
the scheduler and to :func:`~asyncwifi._response.error_from_response`), and maps an error
status to its exception. A failure is classified by one rule
(:func:`~asyncwifi._retry.classify`): retry, verify (a write whose outcome is unknown is
repeated only after a resource-specific ``verify`` shows it did not happen) or raise; one
give-up rule bounds reads and writes alike. Every attempt, logins and verifications
included, goes through the scheduler; the objects a call exchanged (spec §8: each record a
response returned, a write's object) are counted there once it succeeded (``count``). With
the month's allowance known, a call for objects first reserves them (``hold``: a page's size,
clamped by its caller; one object else), and its answer settles the reservation; a call that
fails releases it. A stream's page whose caller left after it was sent (``finish``) is still
read and counted when it comes: the server served it. A call's bookkeeping, and how an
ambiguous write is judged, are :mod:`asyncwifi._call`'s; what it tells hooks and the log,
:mod:`asyncwifi._hooks`'.

tenacity is the one retry engine (policies built in :mod:`asyncwifi._retry`, on the
client's clock). The first attempt runs without it: a call that succeeds, or fails for
good, pays nothing for retrying; only a retryable failure builds an ``AsyncRetrying``,
which replays that failure as its own first attempt so that every failure is judged by
the same stop and wait. Measured (``benchmarks/client.py --pipeline``): ~25 us of CPU for
a call that succeeds, as before; ~+120 us for one that meets a failure and retries.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import NoReturn, TypeVar

import msgspec

from asyncwifi._abandoned import Abandoned
from asyncwifi._address import Address
from asyncwifi._auth import Token, TokenManager
from asyncwifi._call import Call, Verdict, verify_write
from asyncwifi._clock import Clock
from asyncwifi._hooks import Hooks, RequestInfo
from asyncwifi._options import CallOptions, captured
from asyncwifi._protocol import Tag
from asyncwifi._response import error_from_response
from asyncwifi._retry import Remedy, RetryPolicy, classify, client_retrying, refused
from asyncwifi._scopes import attempt_scope, call_scope
from asyncwifi._transport import BodyBuffer, Request, Response, Transport
from asyncwifi.errors import DecodeError, QuotaExhaustedError, TransportError
from asyncwifi.ratelimit import KeepAlive, Lane, Permit, RateLimitHeaders, Reservation, Scheduler

__all__ = ["RequestPipeline"]

log = logging.getLogger("asyncwifi.http")
T = TypeVar("T")


#: the statuses of a request whose token may be the cause: spec §7 gives 403 for an invalid
#: or expired token (and 401 for a bad key: the login's), but common gateways answer 401 to
#: a token they no longer accept. Either, on a request that carried a token, is worth one
#: new login and one retry; a 401 to the login itself is the key's fault (raised at once)
REFUSED_TOKEN = frozenset({401, 403})


def _is_json(body: bytes | memoryview) -> bool:
    try:
        msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return False
    return True


class RequestPipeline:
    """Sends requests for the resources (one per Client)."""

    __slots__ = (
        "abandoned",
        "address",
        "clock",
        "hooks",
        "options",
        "retry",
        "scheduler",
        "tokens",
        "transport",
    )

    def __init__(
        self,
        *,
        transport: Transport,
        scheduler: Scheduler,
        tokens: TokenManager,
        clock: Clock,
        retry: RetryPolicy,
        hooks: Hooks,
        address: Address,
    ) -> None:
        self.transport = transport
        self.scheduler = scheduler
        self.tokens = tokens
        self.clock = clock
        self.retry = retry
        self.hooks = hooks
        #: the base URL and whether anything ever answered there: before that, a request
        #: that reaches nothing shows a wrong URL (raised as one, never waited out)
        self.address = address
        #: answers of requests whose callers left after sending them, being read to count
        self.abandoned = Abandoned()
        #: what a view of the client changes for its calls (``Client.with_options``)
        self.options = CallOptions()

    def derive(self, options: CallOptions) -> RequestPipeline:
        """A pipeline for a view of the client: the same transport, limiter, token, hooks
        and abandoned answers (no second session, no second count), other call options."""
        view = copy.copy(self)
        view.options = options = options.over(self.options)
        view.retry = options.retry or self.retry
        return view

    @attempt_scope
    async def _attempt(self, call: Call) -> Response:
        call.attempt += 1
        token = call.token
        if token is None and call.auth:
            token = await self.tokens.get()
        headers: dict[str, str] = {}
        if call.body is not None:
            headers["Content-Type"] = "application/json"
        if token is not None:
            headers["Authorization"] = token.bearer
        request = Request(call.method, call.path, call.params, call.body, headers, call.into,
                          self.options.timeout)  # fmt: skip
        queued = time.perf_counter()
        permit = self.scheduler.slot(
            lane=call.lane,
            deadline=call.deadline if call.admit_by is None else call.admit_by,
            objects=call.objects,
            keepalive=call.keepalive,
            tag=call.tag,
        )
        if call.admit_by is None:
            await permit.__aenter__()
        else:
            await self._admit_by(call, permit)
        try:
            if self.hooks.on_request:
                self.hooks.fire(
                    self.hooks.on_request,
                    RequestInfo(
                        call.method,
                        call.path,
                        call.attempt,
                        time.perf_counter() - queued,
                        permit.sent_at,
                    ),
                )
            if call.on_sent is not None:
                call.on_sent(self.clock.now())
            started = time.perf_counter()
            try:
                if call.finish is None:
                    response = await self.transport.send(request)
                else:  # the caller may leave: the answer is still read and counted
                    sending = self.transport.send(request)
                    try:
                        response = await self.abandoned.send(
                            sending, lambda f: self._finish(call, f)
                        )
                    except asyncio.CancelledError:
                        call.orphaned = True  # _finish owns the reservation now
                        raise
            except TransportError as exc:
                wrong = self.address.unreached(exc, call.attempt, self.retry.max_attempts)
                if wrong is not None:
                    raise wrong from exc
                raise
            self.address.answered = True
            limits = RateLimitHeaders.from_headers(response.headers)
            permit.observe(response.status, limits)
        finally:
            await permit.__aexit__(None, None, None)
        captured(response)
        elapsed = time.perf_counter() - started
        self.hooks.answered(call.method, call.path, response.status, elapsed, call.attempt,
                            response.request_id)  # fmt: skip
        if response.status < 400:
            return response
        if (
            response.status in REFUSED_TOKEN
            and token is not None
            and call.token is None
            and not call.relogged
            and self.tokens.rejected(token, response.status)
        ):
            # spec §3: an expired or revoked token -> one new login and one retry, never a loop
            call.relogged = True
            response = await self._attempt(call)  # refused again: a refusal, raised
            self.tokens.relogin_worked()
            return response
        raise error_from_response(
            call.method,
            call.path,
            response.status,
            response.headers,
            bytes(response.body),
            now=self.clock.now(),
            limits=limits,
        )

    async def _admit_by(self, call: Call, permit: Permit) -> None:
        """Enter ``permit`` by the call's admission deadline (``max_wait``), or raise at once
        when the limiter already knows it cannot, else when the deadline passes."""
        by = call.admit_by
        assert by is not None
        lane, objects = call.lane, call.objects
        earliest = self.scheduler.earliest_admission(lane, deadline=by, objects=objects)
        if earliest <= by:
            try:
                async with asyncio.timeout(self.clock.real(max(0.0, by - self.clock.now()))):
                    await permit.__aenter__()
                if (now := max(permit.sent_at, self.clock.now())) <= by:  # in time, still
                    return
                permit.refund()  # a late timer or a busy loop since: it never leaves
                earliest = now
            except TimeoutError:
                earliest = self.scheduler.earliest_admission(lane, deadline=by, objects=objects)
        raise QuotaExhaustedError(
            f"{call.method} {call.path}: not sent: the limiter could not admit it within "
            f"max_wait={self.options.max_wait:g} s (the earliest it could go: in "
            f"{max(0.0, earliest - call.started):.1f} s)",
            reset_at=max(earliest, by),
            limit="max_wait",
        )

    async def _finish(self, call: Call, send: asyncio.Future[Response]) -> None:
        """Count the objects of an answer whose caller left (spec §8: served is exchanged)."""
        try:
            response = await send
            if response.status < 400 and call.finish is not None:
                await self._count(call, call.finish(response.body))
        except (Exception, asyncio.CancelledError) as exc:
            # not read (failed, or not in when the client closed): what it held cannot be
            # known, nor counted
            send.cancel()
            log.warning("%s %s: an abandoned answer was not read (%s)", call.method,
                        call.path, type(exc).__name__)  # fmt: skip
        finally:
            self.scheduler.object_gate.release(call.hold)  # settled: no effect

    async def _once(self, call: Call, decode: Callable[[bytes | memoryview], T]) -> T:
        """One attempt and its decoding; the objects of an answer that decoded are counted."""
        response = await self._attempt(call)
        try:
            result = decode(response.body)
        except DecodeError as exc:
            not_json = self.address.not_json(call.method, call.path, response.headers)
            if not_json is not None:
                raise not_json from exc  # a page the server meant: read again, the same
            # a body that is not even JSON was cut in transit: worth one more read
            exc.retryable = not _is_json(response.body)
            raise
        await self._count(call, result)
        return result

    async def _count(self, call: Call, result: object) -> None:
        """Count the objects ``result`` holds (spec §8: they are the subscription's volume),
        settling the call's reservation."""
        if call.count is None:
            return
        n, hold = call.count(result), call.hold
        if n or (hold is not None and hold.ticket is not None):
            await self.scheduler.object_gate.settle(hold, call.tag, n)

    async def _held(self, call: Call, run: Callable[[], Awaitable[T]]) -> T:
        """``run()`` (the call) holding its objects (an allowance binds them) until it
        settles, or failing, gives them back."""
        gate = self.scheduler.object_gate
        if call.hold is None and gate.binds(call.tag):
            call.hold = await gate.reserve(call.tag, 1)  # one object, or an unsized list
        try:
            return await run()
        except BaseException:
            if not call.orphaned:
                gate.release(call.hold)
            raise

    async def _call(
        self,
        call: Call,
        decode: Callable[[bytes | memoryview], T],
        verify: Callable[[], Awaitable[Verdict[T]]] | None,
        *,
        write: bool,
    ) -> T:
        """The first attempt, bare; a retryable failure hands the call over to tenacity."""
        call.started = self.clock.now()
        if self.options.max_wait is not None:
            call.admit_by = call.started + self.options.max_wait
        try:
            return await self._once(call, decode)
        except Exception as exc:
            if classify(exc, write=write) is Remedy.RAISE:
                raise
            first = exc
        return await self._retrying(call, first, decode, verify, write=write)

    async def _retrying(
        self,
        call: Call,
        first: Exception,
        decode: Callable[[bytes | memoryview], T],
        verify: Callable[[], Awaitable[Verdict[T]]] | None,
        *,
        write: bool,
    ) -> T:
        """The call from its first failure on: each failure is classified, counted and (a
        write's) verified here; tenacity gives up, waits and repeats per the policy."""
        replay: Exception | None = first
        #: the last failure that may be repeated, and what it called for
        failure: BaseException | None = None
        decision = Remedy.RETRY

        async def attempt() -> T:
            nonlocal replay, failure, decision
            try:
                if replay is not None:
                    replayed, replay = replay, None
                    raise replayed  # the attempt that ran before tenacity took over
                return await self._once(call, decode)
            except Exception as exc:
                decided = classify(exc, write=write)
                if decided is Remedy.RAISE:
                    raise
                if refused(exc):
                    call.rate_limited += 1
                if decided is Remedy.VERIFY:
                    verdict = await verify_write(call, exc, verify)
                    if verdict.done:
                        assert verdict.result is not None
                        await self._count(call, verdict.result)  # the write's object
                        return verdict.result
                failure, decision = exc, decided
                raise

        def give_up(error: BaseException, attempts: int) -> NoReturn:
            if decision is Remedy.VERIFY:
                raise call.never_confirmed(attempts) from error
            raise error

        def before_sleep(error: BaseException, attempts: int, wait: float) -> None:
            # before anything answered, the next attempt ends in an answer or in the one
            # line that names a wrong base URL (``Address``): the retry itself is no news
            quiet = not self.address.answered
            self.hooks.retrying(call.method, call.path, error, attempts, wait, quiet=quiet)

        retrying = client_retrying(
            self.retry,
            self.clock,
            started=call.started,
            rate_limited=lambda: call.rate_limited,
            retry=lambda error: error is failure,
            before_sleep=before_sleep,
            give_up=give_up,
        )
        result: T = await retrying(attempt)
        return result

    @call_scope("read")
    async def read(
        self,
        method: str,
        path: str,
        *,
        tag: Tag,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        lane: Lane = Lane.DEFAULT,
        deadline: float | None = None,
        objects: str | None = None,
        auth: bool = True,
        decode: Callable[[bytes | memoryview], T],
        count: Callable[[T], int] | None = None,
        on_sent: Callable[[float], None] | None = None,
        into: BodyBuffer | None = None,
        keepalive: KeepAlive | None = None,
        hold: Reservation | None = None,
        finish: bool = False,
    ) -> T:
        """Send a request that is safe to repeat, retrying per the policy; decode the body;
        ``count(answer)``: the objects it holds (spec §8), counted by the limiter under
        ``tag``, what the request asks for (its admissions are counted under it too),
        settling ``hold`` (the objects the caller reserved: :meth:`ObjectGate.reserve`).
        ``finish``: an answer whose caller left once it was sent is read and counted.

        A body that fails to decode on a 200 (truncated JSON) is retried like a dropped
        connection, since repeating a read costs one request and loses nothing. ``into``:
        a buffer to read the body into (see :class:`BodyBuffer`); ``decode`` must then keep
        nothing that points into the body.
        """
        lane = lane if self.options.lane is None else self.options.lane
        call = Call(
            method, path, tag, params, body, lane, deadline, objects, auth, count, on_sent,
            into, keepalive, hold, decode if finish else None,
        )  # fmt: skip
        if count is not None and self.scheduler.object_gate.active:
            return await self._held(call, lambda: self._call(call, decode, None, write=False))
        return await self._call(call, decode, None, write=False)

    @call_scope("write")
    async def write(
        self,
        method: str,
        path: str,
        *,
        tag: Tag,
        body: bytes | None = None,
        params: Mapping[str, str] | None = None,
        objects: str | None = None,
        decode: Callable[[bytes | memoryview], T],
        verify: Callable[[], Awaitable[Verdict[T]]] | None,
        token: Token | None = None,
        count: Callable[[T], int] | None = None,
    ) -> T:
        """Send a write; never repeat it without first knowing that it did not happen
        (``count``: the objects it created, edited or deleted, as for :meth:`read`).

        Certain non-execution (connection refused, a 429 *with* a body, which the gateway
        sends before the request reaches the API) is retried after the scheduler's pause.
        An ambiguous outcome (timeout, dropped connection, 5xx, a bodyless 429, which the
        gateway sends *after* executing a write that spent an object quota) is resolved by
        ``verify``; when there is none, or it cannot tell, the call raises
        :class:`AmbiguousWriteError` rather than risk a double write.
        """
        call = Call(
            method,
            path,
            tag,
            params,
            body,
            Lane.INTERACTIVE if self.options.lane is None else self.options.lane,
            None,
            objects,
            True,
            count,
            token=token,
        )
        if count is not None and self.scheduler.object_gate.active:
            return await self._held(call, lambda: self._call(call, decode, verify, write=True))
        return await self._call(call, decode, verify, write=True)
