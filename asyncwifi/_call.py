"""One call through the request pipeline (``_core``): what it asks for and what it went
through (:class:`Call`), and how a write whose outcome is unknown is judged (:class:`Verdict`,
:func:`verify_write`): never repeated without first knowing that it did not happen."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from asyncwifi._auth import Token
from asyncwifi._protocol import Tag
from asyncwifi._transport import BodyBuffer
from asyncwifi.errors import (
    AmbiguousWriteError,
    ApiError,
    QuotaExhaustedError,
    RateLimitedError,
    TransportError,
)
from asyncwifi.ratelimit import KeepAlive, Lane, Reservation

__all__ = ["Call", "Verdict", "one_object", "verify_write"]

log = logging.getLogger("asyncwifi.http")
T = TypeVar("T")


def one_object(_: object) -> int:
    """The objects of an answer about one record (a get, a write): spec §8 counts one."""
    return 1


@dataclass(frozen=True, slots=True)
class Verdict(Generic[T]):
    """What a write's ``verify`` found: ``done`` with the result, or certainly not done."""

    done: bool
    result: T | None = None


@dataclass(slots=True)
class Call:
    """One call: the request it sends (each attempt anew) and its bookkeeping."""

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
    #: the objects reserved for the answer (None: none reserved), settled by its count
    hold: Reservation | None = None
    #: a request sent is read and counted even if its caller leaves (``_finish``), with this
    finish: Callable[[bytes | memoryview], Any] | None = None
    #: the caller left while its request was out: ``_finish`` owns the reservation
    orphaned: bool = False
    token: Token | None = None
    attempt: int = 0
    relogged: bool = False
    rate_limited: int = 0
    started: float = 0.0
    #: the clock time by which the limiter must admit each attempt (``max_wait``), or None
    admit_by: float | None = None

    def never_confirmed(self, attempts: int) -> AmbiguousWriteError:
        """The error of a write given up on whose last attempts all left it unknown."""
        return AmbiguousWriteError(
            f"the write did not take effect after {attempts} attempts",
            method=self.method,
            path=self.path,
        )


async def verify_write(
    call: Call, ambiguous: Exception, verify: Callable[[], Awaitable[Verdict[T]]] | None
) -> Verdict[T]:
    """Whether ``call``'s write, whose outcome ``ambiguous`` left unknown, took effect
    (``verify`` looks); raises ``AmbiguousWriteError`` when none can tell."""
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
