"""The one owner of backoff: every retry in asyncwifi waits and gives up through tenacity.

Policies are built here and nowhere else: the client's requests (:func:`client_retrying`),
the webhook spool's scheduled retries (:func:`delay_after`) and a plain "retry while it
fails" loop (:func:`retry_while`, for the sync's database). Waits are tenacity's own
(``wait_exponential``, ``wait_random_exponential``: full jitter); time runs on the caller's
clock: ``AsyncRetrying(sleep=clock.sleep)``, and the only time-based stop reads
``clock.now()``, never tenacity's ``time.monotonic``, so a virtual clock drives it all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NoReturn, TypeVar

from tenacity import AsyncRetrying, RetryCallState, Retrying
from tenacity.retry import retry_if_exception, retry_if_exception_type
from tenacity.stop import stop_base, stop_never
from tenacity.wait import wait_base, wait_exponential, wait_random_exponential

from asyncwifi._clock import Clock
from asyncwifi._retry import RetryPolicy, refused

__all__ = [
    "ClientGiveUp",
    "ClientWait",
    "client_retrying",
    "delay_after",
    "exponential",
    "retry_while",
]

T = TypeVar("T")


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
    """

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
        return await call()

    result: T = await retrying(attempt)
    return result
