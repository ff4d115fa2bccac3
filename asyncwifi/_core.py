"""The request pipeline every resource uses: acquire a slot, send, read headers, map, retry.

``Api.read`` retries (tenacity) what is safe to retry; ``Api.write`` never retries blindly:
after an ambiguous outcome it asks a resource-specific ``verify`` whether the write took
effect. Every attempt, logins and verifications included, goes through the scheduler.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from asyncwifi._auth import Token, TokenManager
from asyncwifi._clock import Clock
from asyncwifi._protocol import error_from_response
from asyncwifi._retry import RetryPolicy, attempt_error, is_retryable_read
from asyncwifi._scopes import Scope, attempt_scope, call_scope
from asyncwifi._transport import BodyBuffer, Request, Response, Transport
from asyncwifi.errors import (
    AmbiguousWriteError,
    ApiError,
    DecodeError,
    QuotaExhaustedError,
    RateLimitedError,
    ServerError,
    TransportError,
)
from asyncwifi.ratelimit import Lane, Scheduler

__all__ = ["Api", "Hooks", "RequestInfo", "ResponseInfo", "RetryInfo", "Verdict"]

log = logging.getLogger("asyncwifi.http")
T = TypeVar("T")


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
    params: Mapping[str, str] | None
    body: bytes | None
    lane: Lane
    deadline: float | None
    objects: str | None
    auth: bool
    on_sent: Callable[[float], None] | None = None
    into: BodyBuffer | None = None
    token: Token | None = None
    attempt: int = 0
    relogged: bool = False
    rate_limited: int = 0
    started: float = 0.0


class Api:
    """Sends requests for the resources (one per Client)."""

    __slots__ = ("clock", "hooks", "retry", "scheduler", "tokens", "transport")

    def __init__(
        self,
        *,
        transport: Transport,
        scheduler: Scheduler,
        tokens: TokenManager,
        clock: Clock,
        retry: RetryPolicy,
        hooks: Hooks,
    ) -> None:
        self.transport = transport
        self.scheduler = scheduler
        self.tokens = tokens
        self.clock = clock
        self.retry = retry
        self.hooks = hooks

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
            lane=call.lane, deadline=call.deadline, objects=call.objects
        ) as permit:
            if self.hooks.on_request:
                self.hooks.fire(
                    self.hooks.on_request,
                    RequestInfo(call.method, call.path, call.attempt, time.perf_counter() - queued),
                )
            if call.on_sent is not None:
                call.on_sent(self.clock.now())
            started = time.perf_counter()
            response = await self.transport.send(request)
            permit.observe(response.status, response.headers)
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
            response.status == 403
            and token is not None
            and call.token is None
            and not call.relogged
            and self.tokens.rejected(token)
        ):
            # spec §3: an expired or revoked token -> one new login and one retry, never a loop
            call.relogged = True
            response = await self._attempt(call)  # a 403 again: a refusal, raised
            self.tokens.relogin_worked()
            return response
        raise error_from_response(
            call.method,
            call.path,
            response.status,
            response.headers,
            bytes(response.body),
            now=self.clock.now(),
        )

    def _wait(self, state: RetryCallState) -> float:
        error = attempt_error(state)
        if isinstance(error, RateLimitedError):
            # the scheduler holds every request until the reset the server named
            return 0.0
        return self.retry.backoff(state.attempt_number)

    def _stop(self, call: _Call) -> Callable[[RetryCallState], bool]:
        policy = self.retry

        def stop(state: RetryCallState) -> bool:
            error = attempt_error(state)
            if isinstance(error, RateLimitedError):
                call.rate_limited += 1
                if call.rate_limited > policy.max_rate_limited:
                    return True
                wait = error.retry_after or 0.0
                return wait > policy.max_rate_limit_wait
            if state.attempt_number >= policy.max_attempts:
                return True
            return self.clock.now() - call.started > policy.max_elapsed

        return stop

    def _before_sleep(self, call: _Call) -> Callable[[RetryCallState], None]:
        def before_sleep(state: RetryCallState) -> None:
            error = attempt_error(state)
            wait = state.next_action.sleep if state.next_action else 0.0
            described = type(error).__name__ if error else "?"
            log.warning(
                "%s %s failed (%s: %s); retry %d in %.2f s",
                call.method,
                call.path,
                described,
                error,
                state.attempt_number,
                wait,
            )
            self.hooks.fire(
                self.hooks.on_retry,
                RetryInfo(call.method, call.path, state.attempt_number, wait, described),
            )

        return before_sleep

    @call_scope("read")
    async def read(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        lane: Lane = Lane.DEFAULT,
        deadline: float | None = None,
        objects: str | None = None,
        auth: bool = True,
        decode: Callable[[bytes | memoryview], T],
        on_sent: Callable[[float], None] | None = None,
        into: BodyBuffer | None = None,
    ) -> T:
        """Send a request that is safe to repeat, retrying per the policy; decode the body.

        A body that fails to decode on a 200 (truncated JSON) is retried like a dropped
        connection, since repeating a read costs one request and loses nothing. ``into``:
        a buffer to read the body into (see :class:`BodyBuffer`); ``decode`` must then keep
        nothing that points into the body.
        """
        call = _Call(method, path, params, body, lane, deadline, objects, auth, on_sent, into)
        call.started = self.clock.now()

        async def once() -> T:
            response = await self._attempt(call)
            try:
                return decode(response.body)
            except DecodeError as exc:
                # a body that is not even JSON was cut in transit: worth one more request
                exc.retryable = not _is_json(response.body)
                raise

        # The first attempt runs without tenacity, whose per-call setup costs more than
        # the rest of the pipeline; only a retryable failure hands over to it, replayed
        # as its first attempt so that stop, wait and logging see every attempt.
        try:
            return await once()
        except Exception as exc:
            if not is_retryable_read(exc):
                raise
            first: list[Exception] = [exc]

        async def attempt() -> T:
            if first:
                raise first.pop()
            return await once()

        retrying = AsyncRetrying(
            retry=retry_if_exception(is_retryable_read),
            stop=self._stop(call),
            wait=self._wait,
            sleep=self.clock.sleep,
            before_sleep=self._before_sleep(call),
            reraise=True,
        )
        result: T = await retrying(attempt)
        return result

    @call_scope("write")
    async def write(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        params: Mapping[str, str] | None = None,
        objects: str | None = None,
        decode: Callable[[bytes | memoryview], T],
        verify: Callable[[], Awaitable[Verdict[T]]] | None,
        token: Token | None = None,
    ) -> T:
        """Send a write; never repeat it without first knowing that it did not happen.

        Certain non-execution (connection refused, a 429 *with* a body, which the gateway
        sends before the request reaches the API) is retried after the scheduler's pause.
        An ambiguous outcome (timeout, dropped connection, 5xx, a bodyless 429, which the
        gateway sends *after* executing a write that spent an object quota: gateway.md) is
        resolved by ``verify``; when there is none, or it cannot tell, the call raises
        :class:`AmbiguousWriteError` rather than risk a double write.
        """
        call = _Call(method, path, params, body, Lane.INTERACTIVE, None, objects, True, token=token)
        call.started = self.clock.now()
        policy = self.retry
        while True:
            try:
                response = await self._attempt(call)
                return decode(response.body)
            except RateLimitedError as exc:
                if exc.bodyless:
                    ambiguous: Exception = exc
                else:
                    call.rate_limited += 1
                    if call.rate_limited > policy.max_rate_limited or (
                        (exc.retry_after or 0.0) > policy.max_rate_limit_wait
                    ):
                        raise
                    log.warning("%s %s refused with 429 before execution; retrying", method, path)
                    continue
            except TransportError as exc:
                if not exc.request_may_have_been_executed:
                    if call.attempt >= policy.max_attempts or exc.kind == "tls":
                        raise
                    await self.clock.sleep(policy.backoff(call.attempt))
                    continue
                ambiguous = exc
            except ServerError as exc:
                ambiguous = exc
            if verify is None:
                raise AmbiguousWriteError(
                    f"outcome unknown after {type(ambiguous).__name__} ({ambiguous}); "
                    "no way to check it, so it was not retried",
                    method=method,
                    path=path,
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
                    method=method,
                    path=path,
                ) from ambiguous
            if verdict.done:
                log.warning(
                    "%s %s: %s, but a lookup shows the write took effect",
                    method,
                    path,
                    type(ambiguous).__name__,
                )
                assert verdict.result is not None
                return verdict.result
            if call.attempt >= policy.max_attempts:
                raise AmbiguousWriteError(
                    f"the write did not take effect after {call.attempt} attempts",
                    method=method,
                    path=path,
                ) from ambiguous
            log.warning(
                "%s %s: %s and a lookup shows the write did not happen; retrying",
                method,
                path,
                type(ambiguous).__name__,
            )
            await self.clock.sleep(policy.backoff(call.attempt))
