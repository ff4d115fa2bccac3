"""The retry policy of every request, reads and writes, and its backoff: classify a failure,
wait, give up. Every retry in asyncwifi waits and gives up through here.

One classifier (:func:`classify`) says what a failed attempt calls for: ``RETRY`` (nothing
was executed, or repeating is harmless), ``VERIFY`` (a write may have been executed: look
before repeating it) or ``RAISE``. One give-up rule (:meth:`RetryPolicy.gives_up`) bounds
every call: attempts and clock time, and for 429s the count and the server's named wait.

The waits and the loops that apply the rule are tenacity's, built here and nowhere else:
the client's requests (:func:`client_retrying`), the webhook spool's scheduled retries
(:func:`delay_after`, :meth:`RetryPolicy.delay`) and a plain "retry while it fails" loop
(:func:`retry_while`, for the sync's database). Waits are tenacity's own
(``wait_exponential``, ``wait_random_exponential``: full jitter); time runs on the caller's
clock: ``AsyncRetrying(sleep=clock.sleep)``, and the only time-based stop reads
``clock.now()``, never tenacity's ``time.monotonic``, so a virtual clock drives it all.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NoReturn, TypeGuard, TypeVar

from tenacity import AsyncRetrying, RetryCallState, Retrying
from tenacity.retry import retry_if_exception, retry_if_exception_type
from tenacity.stop import stop_base, stop_never
from tenacity.wait import wait_base, wait_exponential, wait_random_exponential

from asyncwifi._clock import Clock
from asyncwifi._defaults import RETRY_INITIAL, RETRY_MAX
from asyncwifi._protocol import require_positive
from asyncwifi.errors import (
    ConfigurationError,
    DecodeError,
    RateLimitedError,
    ServerError,
    TransportError,
)

__all__ = [
    "ClientGiveUp",
    "ClientWait",
    "Remedy",
    "RetryPolicy",
    "classify",
    "client_retrying",
    "delay_after",
    "exponential",
    "refused",
    "retry_while",
]

T = TypeVar("T")


class Remedy(enum.Enum):
    """What a failed attempt calls for."""

    #: try again after the policy's wait (:class:`ClientWait`)
    RETRY = "retry"
    #: a write may have taken effect: ask whether it did before repeating it
    VERIFY = "verify"
    #: give the error to the caller
    RAISE = "raise"


def refused(exc: BaseException) -> TypeGuard[RateLimitedError]:
    """A 429 with a body: the gateway refused the request before the API saw it."""
    return isinstance(exc, RateLimitedError) and not exc.bodyless


def classify(exc: BaseException, *, write: bool) -> Remedy:
    """The one rule for which failures are retried, for reads (``write=False``) and writes.

    A read is safe to repeat, so whatever may pass is retried. A write is repeated blindly
    only when it certainly never ran: a refused connection, or a 429 *with* a body (the
    gateway sends it before the request reaches the API). A timeout, a dropped connection,
    a 5xx or a bodyless 429 (the gateway sends one *after* executing a request that spent
    an object quota, docs/reference/gateway.md) leave a write's outcome unknown: verify.
    """
    if isinstance(exc, RateLimitedError):
        if not exc.bodyless:
            return Remedy.RETRY
        # a bodyless 429 is the per-object quota, spent until the day resets: repeating a
        # read would only burn another request; a write was executed
        return Remedy.VERIFY if write else Remedy.RAISE
    if isinstance(exc, TransportError):
        if exc.kind == "tls":
            return Remedy.RAISE
        if write and exc.request_may_have_been_executed:
            return Remedy.VERIFY
        return Remedy.RETRY
    if isinstance(exc, ServerError):
        return Remedy.VERIFY if write else Remedy.RETRY
    if not write and isinstance(exc, DecodeError) and exc.retryable:
        # a 200 whose body was cut mid-JSON is a transport fault in disguise
        return Remedy.RETRY
    return Remedy.RAISE


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a call is retried (times in the clock's seconds): the client's requests, and
    the webhook dispatcher's handlers (with its own defaults, :meth:`delay`).

    ``max_attempts`` bounds attempts per call (the first included); ``max_elapsed`` the
    total time spent retrying; ``backoff_base``/``backoff_max`` shape the exponential
    backoff with full jitter; ``max_rate_limit_wait``: a 429 whose reset is further away
    raises instead of sleeping; ``max_rate_limited``: consecutive 429s tolerated for one
    call before giving up.
    """

    max_attempts: int = 5
    max_elapsed: float = 300.0
    backoff_base: float = RETRY_INITIAL
    backoff_max: float = RETRY_MAX
    max_rate_limit_wait: float = 3_600.0
    max_rate_limited: int = 3

    def __post_init__(self) -> None:
        # the one check of counts and seconds (finite: an infinite wait is a hang, not a policy)
        require_positive(
            self.max_attempts, "RetryPolicy.max_attempts", integer=True, error=ConfigurationError
        )
        require_positive(
            self.max_rate_limited,
            "RetryPolicy.max_rate_limited",
            integer=True,
            zero=True,
            error=ConfigurationError,
        )
        for name in ("max_elapsed", "backoff_base", "backoff_max", "max_rate_limit_wait"):
            require_positive(
                getattr(self, name), f"RetryPolicy.{name}", zero=True, error=ConfigurationError
            )

    def gives_up(
        self, error: BaseException, *, attempts: int, rate_limited: int, elapsed: float
    ) -> bool:
        """Whether a call stops after ``error`` (its ``attempts``-th attempt failed).

        A refused 429 counts against ``max_rate_limited`` and ``max_rate_limit_wait`` (the
        server's wait: ``Retry-After`` in seconds or as an HTTP date, else
        ``RateLimit-Reset``); any other failure against ``max_attempts`` and ``max_elapsed``.
        """
        if refused(error):
            wait = error.retry_after or 0.0  # one reading of Retry-After: _response.py
            return rate_limited > self.max_rate_limited or wait > self.max_rate_limit_wait
        return attempts >= self.max_attempts or elapsed > self.max_elapsed

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based) when the retry is scheduled
        for later rather than slept through (the webhook spool): ``backoff_base`` doubled
        each time, at most ``backoff_max``; no jitter (each event is retried on its own)."""
        return delay_after(exponential(self.backoff_base, self.backoff_max), attempt)


def exponential(
    initial: float, maximum: float, *, multiplier: float = 2.0, jitter: bool = False
) -> wait_base:
    """``initial * multiplier ** (n - 1)`` seconds after failure ``n``, at most ``maximum``;
    with ``jitter`` a uniform draw below that ("full jitter", AWS architecture blog)."""
    kind = wait_random_exponential if jitter else wait_exponential
    return kind(multiplier=initial, max=maximum, exp_base=multiplier)


#: the retrying object that owns the states :func:`delay_after` evaluates (never run)
_SCHEDULED = Retrying()


def delay_after(wait: wait_base, attempt: int) -> float:
    """The wait ``wait`` names after failed attempt ``attempt`` (1-based), for code that
    schedules a retry for later (the webhook spool) instead of sleeping through it."""
    state = RetryCallState(_SCHEDULED, fn=None, args=(), kwargs={})
    state.attempt_number = max(1, attempt)
    return float(wait(state))


def _failure(state: RetryCallState) -> BaseException:
    """The exception of the attempt being judged (stops and waits only see failures)."""
    assert state.outcome is not None
    error = state.outcome.exception()
    assert error is not None
    return error


class ClientWait(wait_base):
    """The client's pause before a retry: none after a refused 429 (the scheduler already
    holds every request until the server's reset, and the retry keeps its place in its
    queue), else exponential backoff with full jitter."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.backoff = exponential(policy.backoff_base, policy.backoff_max, jitter=True)

    def __call__(self, retry_state: RetryCallState) -> float:
        return 0.0 if refused(_failure(retry_state)) else float(self.backoff(retry_state))


class ClientGiveUp(stop_base):
    """The client's give-up rule (:meth:`RetryPolicy.gives_up`) on the injected clock:
    elapsed time is ``clock.now() - started``, ``rate_limited()`` the refused 429s so far."""

    def __init__(
        self, policy: RetryPolicy, clock: Clock, started: float, rate_limited: Callable[[], int]
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.started = started
        self.rate_limited = rate_limited

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.policy.gives_up(
            _failure(retry_state),
            attempts=retry_state.attempt_number,
            rate_limited=self.rate_limited(),
            elapsed=self.clock.now() - self.started,
        )


def client_retrying(
    policy: RetryPolicy,
    clock: Clock,
    *,
    started: float,
    rate_limited: Callable[[], int],
    retry: Callable[[BaseException], bool],
    before_sleep: Callable[[BaseException, int, float], None],
    give_up: Callable[[BaseException, int], NoReturn],
) -> AsyncRetrying:
    """The client's retry loop for one call: ``retry(error)`` says whether a failure may be
    repeated, ``before_sleep(error, attempt, wait)`` reports a retry, and when the policy
    gives up the loop calls ``give_up(error, attempts)``, which raises. Built only after a
    first failure (its setup is the cost of a retry, not of every call)."""

    def stopped(state: RetryCallState) -> None:
        give_up(_failure(state), state.attempt_number)

    def sleeping(state: RetryCallState) -> None:
        assert state.next_action is not None
        before_sleep(_failure(state), state.attempt_number, state.next_action.sleep)

    return AsyncRetrying(
        sleep=clock.sleep,
        retry=retry_if_exception(retry),
        wait=ClientWait(policy),
        stop=ClientGiveUp(policy, clock, started, rate_limited),
        before_sleep=sleeping,
        retry_error_callback=stopped,
    )


class _Asked(stop_base):
    """Stop when ``predicate()`` says so (a stop flag, a shutdown)."""

    def __init__(self, predicate: Callable[[], bool]) -> None:
        self.predicate = predicate

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.predicate()


async def retry_while(
    call: Callable[[], Awaitable[T]],
    *,
    retry_on: type[BaseException] | tuple[type[BaseException], ...],
    initial: float,
    maximum: float,
    sleep: Callable[[float], Awaitable[None]],
    on_failure: Callable[[BaseException], None] | None = None,
    before_sleep: Callable[[BaseException, float], None] | None = None,
    give_up: Callable[[], bool] | None = None,
    jitter: bool = False,
) -> T:
    """``await call()`` until it returns, again after each ``retry_on`` failure: waits double
    from ``initial`` to ``maximum`` through ``sleep``; no limit on attempts or time.

    After each such failure ``on_failure(error)`` runs, then ``give_up()``: true re-raises
    that failure; else ``before_sleep(error, wait)`` runs and ``sleep(wait)`` is awaited.
    Any other exception, and one raised by ``sleep``, propagates at once.

    The first attempt runs outside tenacity (a database call made a few dozen times a pass
    spent a tenth of a fleet worker's loop in tenacity's set-up); its failure is handed to
    tenacity as the first attempt's, so what follows is the same.
    """
    try:
        return await call()
    except retry_on as exc:
        first: BaseException | None = exc

    def after(state: RetryCallState) -> None:
        if on_failure is not None:
            on_failure(_failure(state))

    def sleeping(state: RetryCallState) -> None:
        assert state.next_action is not None
        if before_sleep is not None:
            before_sleep(_failure(state), state.next_action.sleep)

    retrying = AsyncRetrying(
        sleep=sleep,
        retry=retry_if_exception_type(retry_on),
        wait=exponential(initial, maximum, jitter=jitter),
        stop=stop_never if give_up is None else _Asked(give_up),
        after=after,
        before_sleep=sleeping,
        reraise=True,
    )

    async def attempt() -> T:
        # a coroutine function: tenacity awaits only what it can tell is one (a lambda
        # returning a coroutine would be handed back unawaited)
        nonlocal first
        if first is not None:  # the attempt made above
            failed, first = first, None
            raise failed
        return await call()

    result: T = await retrying(attempt)
    return result
