"""The request pipeline every resource uses: send once, interpret once, one retry policy.

An attempt acquires a scheduler slot, sends, parses the rate-limit headers once (fed to
the scheduler and to :func:`~asyncwifi._response.error_from_response`), and maps an error
status to its exception. A failure is classified by one rule
(:func:`~asyncwifi._retry.classify`): retry, verify (a write whose outcome is unknown is
repeated only after a resource-specific ``verify`` shows it did not happen) or raise; one
give-up rule bounds reads and writes alike. Every attempt, logins and verifications
included, goes through the scheduler; the objects a call exchanged (spec §8: each record a
response returned, a write's object) are counted there once it succeeded (``count``).

tenacity is the one retry engine (policies built in :mod:`asyncwifi._backoff`, on the
client's clock). The first attempt runs without it: a call that succeeds, or fails for
good, pays nothing for retrying; only a retryable failure builds an ``AsyncRetrying``,
which replays that failure as its own first attempt so that every failure is judged by
the same stop and wait. Measured (``benchmarks/client.py --pipeline``): ~25 us of CPU for
a call that succeeds, as before; ~+120 us for one that meets a failure and retries.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, TypeVar

import msgspec

from asyncwifi._auth import Token, TokenManager
from asyncwifi._backoff import client_retrying
from asyncwifi._clock import Clock
from asyncwifi._protocol import Tag
from asyncwifi._response import error_from_response
from asyncwifi._retry import Remedy, RetryPolicy, classify, refused
from asyncwifi._scopes import Scope, attempt_scope, call_scope
from asyncwifi._transport import BodyBuffer, Request, Response, Transport
from asyncwifi.errors import (
    AmbiguousWriteError,
    ApiError,
    DecodeError,
    QuotaExhaustedError,
    RateLimitedError,
    TransportError,
)
from asyncwifi.ratelimit import Lane, Scheduler
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive

__all__ = [
    "Hooks",
    "RequestInfo",
    "RequestPipeline",
    "ResponseInfo",
    "RetryInfo",
    "Verdict",
    "one_object",
]

log = logging.getLogger("asyncwifi.http")
T = TypeVar("T")


#: the statuses of a request whose token may be the cause: spec §7 gives 403 for an invalid
#: or expired token (and 401 for a bad key: the login's), but common gateways answer 401 to
#: a token they no longer accept. Either, on a request that carried a token, is worth one
#: new login and one retry; a 401 to the login itself is the key's fault (raised at once)
REFUSED_TOKEN = frozenset({401, 403})


def one_object(_: object) -> int:
    """The objects of an answer about one record (a get, a write): spec §8 counts one."""
    return 1


def _is_json(body: bytes | memoryview) -> bool:
    try:
        msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """Passed to ``on_request``: an attempt is about to be sent."""

    method: str
    path: str
    attempt: int
    #: real seconds this attempt waited for its scheduler slot
    waited: float = 0.0
    #: clock time of its admission (what the rate-limit windows count; the task that sends
    #: it may resume a little later on a busy event loop)
    admitted_at: float = 0.0


@dataclass(frozen=True, slots=True)
class ResponseInfo:
    """Passed to ``on_response``: an attempt got a response (``status``) in ``elapsed`` s."""

    method: str
    path: str
    status: int
    elapsed: float
    attempt: int
    request_id: str | None


@dataclass(frozen=True, slots=True)
class RetryInfo:
    """Passed to ``on_retry``: attempt ``attempt`` failed with ``error``; next in ``wait`` s."""

    method: str
    path: str
    attempt: int
    wait: float
    error: str


@dataclass(slots=True)
class Hooks:
    """Callbacks for metrics; an exception in a hook is logged, never raised into a call."""

    on_request: list[Callable[[RequestInfo], None]] = field(default_factory=list)
    on_response: list[Callable[[ResponseInfo], None]] = field(default_factory=list)
    on_retry: list[Callable[[RetryInfo], None]] = field(default_factory=list)
    #: context managers around each call / each attempt (see _scopes; asyncwifi.otel)
    call_scopes: list[Scope] = field(default_factory=list)
    attempt_scopes: list[Scope] = field(default_factory=list)
    #: called with the resource ("events") when an expired scroll resumes
    on_scroll_resume: list[Callable[[str], None]] = field(default_factory=list)

    def fire(self, callbacks: list[Callable[[Any], None]], info: object) -> None:
        for callback in callbacks:
            try:
                callback(info)
            except Exception:
                log.warning("hook %r raised; the request goes on", callback, exc_info=True)


@dataclass(frozen=True, slots=True)
class Verdict(Generic[T]):
    """What a write's ``verify`` found: ``done`` with the result, or certainly not done."""

    done: bool
    result: T | None = None


@dataclass(slots=True)
class _Call:
    method: str
    path: str
    #: what the request asks for, as the limiter counts it: the caller's to say
    tag: Tag
    params: Mapping[str, str] | None
    body: bytes | None
    lane: Lane
    deadline: float | None
    objects: str | None
    auth: bool
    #: how many objects (records) a decoded answer holds, counted by the limiter per tag
    count: Callable[[Any], int] | None = None
    on_sent: Callable[[float], None] | None = None
    into: BodyBuffer | None = None
    keepalive: KeepAlive | None = None
    token: Token | None = None
    attempt: int = 0
    relogged: bool = False
    rate_limited: int = 0
    started: float = 0.0


class RequestPipeline:
    """Sends requests for the resources (one per Client)."""

    __slots__ = (
        "answered",
        "clock",
        "hooks",
        "misconfigured",
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
        misconfigured: Callable[[TransportError], Exception] | None = None,
    ) -> None:
        self.transport = transport
        self.scheduler = scheduler
        self.tokens = tokens
        self.clock = clock
        self.retry = retry
        self.hooks = hooks
        #: whether any response ever came back (then an unreachable host is an outage)
        self.answered = False
        #: the error for an address where nothing listens before anything ever answered:
        #: the client's words for a wrong base URL (raised at once, never retried)
        self.misconfigured = misconfigured

    @attempt_scope
    async def _attempt(self, call: _Call) -> Response:
        call.attempt += 1
        token = call.token
        if token is None and call.auth:
            token = await self.tokens.get()
        headers: dict[str, str] = {}
        if call.body is not None:
            headers["Content-Type"] = "application/json"
        if token is not None:
            headers["Authorization"] = token.bearer
        request = Request(call.method, call.path, call.params, call.body, headers, call.into)
        queued = time.perf_counter()
        async with self.scheduler.slot(
            lane=call.lane,
            deadline=call.deadline,
            objects=call.objects,
            keepalive=call.keepalive,
            tag=call.tag,
        ) as permit:
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
                response = await self.transport.send(request)
            except TransportError as exc:
                if exc.unreachable and not self.answered and self.misconfigured is not None:
                    # nothing has ever answered at this address: not an outage to wait
                    # out (the retry policy is for a server that answered before), but
                    # a wrong address, said at once
                    raise self.misconfigured(exc) from exc
                raise
            self.answered = True
            limits = RateLimitHeaders.from_headers(response.headers)
            permit.observe(response.status, limits)
        elapsed = time.perf_counter() - started
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s %s -> %d in %.1f ms (attempt %d)",
                call.method,
                call.path,
                response.status,
                elapsed * 1000,
                call.attempt,
            )
        if self.hooks.on_response:
            self.hooks.fire(
                self.hooks.on_response,
                ResponseInfo(
                    call.method,
                    call.path,
                    response.status,
                    elapsed,
                    call.attempt,
                    response.request_id,
                ),
            )
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

    async def _once(self, call: _Call, decode: Callable[[bytes | memoryview], T]) -> T:
        """One attempt and its decoding; the objects of an answer that decoded are counted."""
        response = await self._attempt(call)
        try:
            result = decode(response.body)
        except DecodeError as exc:
            # a body that is not even JSON was cut in transit: worth one more read
            exc.retryable = not _is_json(response.body)
            raise
        await self._count(call, result)
        return result

    async def _count(self, call: _Call, result: object) -> None:
        """Count the objects ``result`` holds (spec §8: they are the subscription's volume)."""
        if call.count is not None and (n := call.count(result)):
            await self.scheduler.count_objects(call.tag, n)

    async def _call(
        self,
        call: _Call,
        decode: Callable[[bytes | memoryview], T],
        verify: Callable[[], Awaitable[Verdict[T]]] | None,
        *,
        write: bool,
    ) -> T:
        """The first attempt, bare; a retryable failure hands the call over to tenacity."""
        call.started = self.clock.now()
        try:
            return await self._once(call, decode)
        except Exception as exc:
            if classify(exc, write=write) is Remedy.RAISE:
                raise
            first = exc
        return await self._retrying(call, first, decode, verify, write=write)

    async def _retrying(
        self,
        call: _Call,
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
                    verdict = await self._verify(call, exc, verify)
                    if verdict.done:
                        assert verdict.result is not None
                        await self._count(call, verdict.result)  # the write's object
                        return verdict.result
                failure, decision = exc, decided
                raise

        def give_up(error: BaseException, attempts: int) -> NoReturn:
            if decision is Remedy.VERIFY:
                raise AmbiguousWriteError(
                    f"the write did not take effect after {attempts} attempts",
                    method=call.method,
                    path=call.path,
                ) from error
            raise error

        def before_sleep(error: BaseException, attempts: int, wait: float) -> None:
            described = type(error).__name__
            log.warning(
                "%s %s failed (%s: %s); retry %d in %.2f s",
                call.method,
                call.path,
                described,
                error,
                attempts,
                wait,
            )
            if self.hooks.on_retry:
                self.hooks.fire(
                    self.hooks.on_retry,
                    RetryInfo(call.method, call.path, attempts, wait, described),
                )

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

    async def _verify(
        self,
        call: _Call,
        ambiguous: Exception,
        verify: Callable[[], Awaitable[Verdict[T]]] | None,
    ) -> Verdict[T]:
        """Whether a write whose outcome is unknown took effect; raises when none can tell."""
        if verify is None:
            raise AmbiguousWriteError(
                f"outcome unknown after {type(ambiguous).__name__} ({ambiguous}); "
                "no way to check it, so it was not retried",
                method=call.method,
                path=call.path,
            ) from ambiguous
        try:
            verdict = await verify()
        except (ApiError, QuotaExhaustedError, TransportError) as exc:
            hint = (
                "the gateway sends a bodyless 429 after executing a write whose object "
                "quota is spent, so it most likely took effect"
                if isinstance(ambiguous, RateLimitedError)
                else "it may or may not have taken effect"
            )
            raise AmbiguousWriteError(
                f"{type(ambiguous).__name__}: {hint}; the lookup to confirm it failed "
                f"({type(exc).__name__}: {exc}); not retried",
                method=call.method,
                path=call.path,
            ) from ambiguous
        if verdict.done:
            log.warning(
                "%s %s: %s, but a lookup shows the write took effect",
                call.method,
                call.path,
                type(ambiguous).__name__,
            )
        return verdict

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
    ) -> T:
        """Send a request that is safe to repeat, retrying per the policy; decode the body;
        ``count(answer)``: the objects it holds (spec §8), counted by the limiter under
        ``tag``, what the request asks for (its admissions are counted under it too).

        A body that fails to decode on a 200 (truncated JSON) is retried like a dropped
        connection, since repeating a read costs one request and loses nothing. ``into``:
        a buffer to read the body into (see :class:`BodyBuffer`); ``decode`` must then keep
        nothing that points into the body.
        """
        call = _Call(
            method, path, tag, params, body, lane, deadline, objects, auth, count, on_sent,
            into, keepalive,
        )  # fmt: skip
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
        call = _Call(
            method,
            path,
            tag,
            params,
            body,
            Lane.INTERACTIVE,
            None,
            objects,
            True,
            count,
            token=token,
        )
        return await self._call(call, decode, verify, write=True)
