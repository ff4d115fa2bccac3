"""Retry policies: which failures are retried, how long to wait, when to stop.

Reads are retried on 5xx, dropped connections, timeouts and truncated bodies, with
exponential backoff and full jitter, bounded in attempts and in total (clock) time. A 429
is retried without a backoff of our own: the scheduler has already paused every request
until the reset the server named, so the next attempt cannot go out before it. Writes are
never retried here: see ``Client._write``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tenacity import RetryCallState

from asyncwifi.errors import DecodeError, RateLimitedError, ServerError, TransportError

__all__ = ["RetryPolicy", "is_retryable_read"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How requests are retried (times in the client clock's seconds).

    ``max_attempts`` bounds attempts per call (the first included); ``max_elapsed`` the
    total time spent retrying; ``backoff_base``/``backoff_max`` shape the exponential
    backoff with full jitter (AWS architecture blog: "Exponential Backoff And Jitter");
    ``max_rate_limit_wait``: a 429 whose reset is further away raises instead of sleeping;
    ``max_rate_limited``: consecutive 429s tolerated for one call before giving up.
    """

    max_attempts: int = 5
    max_elapsed: float = 300.0
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_rate_limit_wait: float = 3_600.0
    max_rate_limited: int = 3

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.max_elapsed < 0:
            raise ValueError("retry times must not be negative")

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Full-jitter backoff before retry number ``attempt`` (1 = the first retry)."""
        ceiling = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
        return (rng or random).uniform(0.0, ceiling)


def is_retryable_read(exc: BaseException) -> bool:
    """Whether a failed read is worth another attempt."""
    if isinstance(exc, RateLimitedError):
        # a bodyless 429 is the per-object quota (gateway.md): spent until the day resets,
        # so a retry would only burn another request
        return not exc.bodyless
    if isinstance(exc, ServerError):
        return True
    if isinstance(exc, TransportError):
        return exc.kind != "tls"
    # a 200 whose body was cut mid-JSON is a transport fault in disguise
    return isinstance(exc, DecodeError) and exc.retryable


def attempt_error(state: RetryCallState) -> BaseException | None:
    """The exception of the last attempt, if it failed."""
    outcome = state.outcome
    if outcome is None or not outcome.failed:
        return None
    return outcome.exception()
