"""The retry policy of every request, reads and writes: classify a failure, give up.

One classifier (:func:`classify`) says what a failed attempt calls for: ``RETRY`` (nothing
was executed, or repeating is harmless), ``VERIFY`` (a write may have been executed: look
before repeating it) or ``RAISE``. One give-up rule (:meth:`RetryPolicy.gives_up`) bounds
every call: attempts and clock time, and for 429s the count and the server's named wait.
The waits, and the loop that applies this rule, are tenacity's: see :mod:`asyncwifi._backoff`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeGuard

from asyncwifi._protocol import require_positive
from asyncwifi.errors import (
    ConfigurationError,
    DecodeError,
    RateLimitedError,
    ServerError,
    TransportError,
)

__all__ = ["Remedy", "RetryPolicy", "classify", "refused"]


class Remedy(enum.Enum):
    """What a failed attempt calls for."""

    #: try again after the policy's wait (:class:`asyncwifi._backoff.ClientWait`)
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
    backoff_base: float = 0.5
    backoff_max: float = 30.0
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
        from asyncwifi._backoff import delay_after, exponential  # _backoff reads this module

        return delay_after(exponential(self.backoff_base, self.backoff_max), attempt)
