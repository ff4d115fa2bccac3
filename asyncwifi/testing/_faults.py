"""Fault injection: seeded, deterministic, changeable at runtime (``sim.faults = Faults(...)``).

The fate of the n-th request in scope of a :class:`Faults` value depends only on its seed
and on n, so the same sequence of requests meets the same faults on every run. Rates are
probabilities in ``[0, 1]``; times are in the clock's seconds.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncwifi._protocol import require_positive
from asyncwifi.errors import ConfigurationError

__all__ = ["Fate", "FaultPlan", "Faults"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Faults:
    """What can go wrong, and how often.

    Per-request faults (all but ``revoke_tokens_every`` and ``hidden_competitor``, which act
    on the whole gateway) apply only to requests matching ``paths`` and ``methods``.
    """

    #: seed of the fault sequence (independent of the data seed)
    seed: int = 0
    #: share of requests answered with a 5xx *instead of* reaching the API (counted by the
    #: gateway, nothing executed)
    error_rate: float = 0.0
    #: the statuses an injected error picks from
    error_statuses: tuple[int, ...] = (500, 502, 503, 504)
    #: share of injected errors sent with an empty body (the others carry Kong's JSON)
    empty_error_body_rate: float = 0.5
    #: share of requests whose connection is closed without a response *after* the API ran
    #: (a write happened, the quota was spent, the client sees a disconnect)
    drop_rate: float = 0.0
    #: share of requests whose connection is closed before the gateway saw them
    drop_before_rate: float = 0.0
    #: share of successful (2xx) responses whose JSON body is cut in the middle (the HTTP
    #: message itself is complete and well-formed)
    truncated_rate: float = 0.0
    #: share of 429 answers sent as HTML whatever the ``Accept`` header says
    html_429_rate: float = 0.0
    #: share of 429 answers rewritten as a proxy in front of the gateway may send them:
    #: ``Retry-After`` as an HTTP date (RFC 9110 allows a date or seconds), no
    #: ``RateLimit-*`` or ``X-RateLimit-*`` headers
    date_429_rate: float = 0.0
    #: fixed delay added before each response
    latency: float = 0.0
    #: plus a uniform random delay in ``[0, latency_jitter]``
    latency_jitter: float = 0.0
    #: share of requests delayed by ``spike`` more (default: longer than a scroll window)
    spike_rate: float = 0.0
    spike: float = 90.0
    #: uniform random delay in ``[0, inbound_jitter]`` *before* the gateway counts the request
    #: (the server counts at arrival, the client at send)
    inbound_jitter: float = 0.0
    #: revoke every token at each multiple of this many clock seconds (early revocation)
    revoke_tokens_every: float | None = None
    #: requests per clock minute spent on the same key by an unseen client
    hidden_competitor: float = 0.0
    #: the displayed remaining counts jump by up to +/- this much (approximate node counters)
    remaining_jitter: int = 0
    #: shell-style patterns of paths the per-request faults apply to (empty: all paths)
    paths: tuple[str, ...] = ()
    #: methods the per-request faults apply to, e.g. ``("POST", "PUT", "DELETE")`` (empty: all)
    methods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in (
            "error_rate",
            "empty_error_body_rate",
            "drop_rate",
            "drop_before_rate",
            "truncated_rate",
            "html_429_rate",
            "date_429_rate",
            "spike_rate",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"{name} must be within [0, 1], got {value!r}")
        for name in ("latency", "latency_jitter", "spike", "inbound_jitter", "hidden_competitor"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name} must not be negative")
        if self.revoke_tokens_every is not None:
            require_positive(
                self.revoke_tokens_every, "revoke_tokens_every", error=ConfigurationError
            )
        if not self.error_statuses or any(not 500 <= s <= 599 for s in self.error_statuses):
            raise ConfigurationError("error_statuses must be 5xx codes")

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> Faults:
        """A :class:`Faults` from its JSON fields (``dataclasses.asdict`` output; lists
        become tuples)."""
        values = dict(fields)
        for key in ("error_statuses", "paths", "methods"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)

    def applies_to(self, method: str, path: str) -> bool:
        """Whether the per-request faults apply to this request."""
        if self.methods and method.upper() not in {m.upper() for m in self.methods}:
            return False
        return not self.paths or any(fnmatch.fnmatchcase(path, p) for p in self.paths)


@dataclass(frozen=True, slots=True)
class Fate:
    """What happens to one request (all zero/False: nothing)."""

    drop_before: bool = False
    inbound_delay: float = 0.0
    error_status: int = 0
    error_empty: bool = False
    drop_after: bool = False
    truncate_at: float = 0.0
    delay: float = 0.0
    spike: bool = False
    html_429: bool = False
    date_429: bool = False
    remaining_noise: int = 0


_CLEAN = Fate()


class FaultPlan:
    """Draws the fate of each request from a :class:`Faults` value, deterministically."""

    __slots__ = ("_n", "faults", "quiet")

    def __init__(self, faults: Faults | None) -> None:
        self.faults = faults or Faults()
        f = self.faults
        #: True when no per-request fault can happen (the fast path)
        self.quiet = not (
            f.error_rate
            or f.drop_rate
            or f.drop_before_rate
            or f.truncated_rate
            or f.html_429_rate
            or f.date_429_rate
            or f.latency
            or f.latency_jitter
            or f.spike_rate
            or f.inbound_jitter
            or f.remaining_jitter
        )
        self._n = 0

    def fate(self, method: str, path: str) -> Fate:
        """The fate of the next request (draws nothing when out of scope or quiet)."""
        f = self.faults
        if self.quiet:
            return _CLEAN
        noise = 0
        if not f.applies_to(method, path):
            return _CLEAN
        self._n += 1
        rnd = random.Random(f.seed * 1_000_003 + self._n)
        # a fixed number of draws per request, so that each fate depends only on (seed, n)
        u = [rnd.random() for _ in range(11)]
        if f.remaining_jitter:
            noise = round((u[9] * 2 - 1) * f.remaining_jitter)
        spike = u[6] < f.spike_rate
        delay = f.latency + u[5] * f.latency_jitter + (f.spike if spike else 0.0)
        return Fate(
            drop_before=u[0] < f.drop_before_rate,
            inbound_delay=u[1] * f.inbound_jitter,
            error_status=(
                f.error_statuses[int(u[7] * len(f.error_statuses))] if u[2] < f.error_rate else 0
            ),
            error_empty=u[8] < f.empty_error_body_rate,
            drop_after=u[3] < f.drop_rate,
            truncate_at=(0.1 + 0.8 * u[7]) if u[4] < f.truncated_rate else 0.0,
            delay=delay,
            spike=spike,
            html_429=u[8] < f.html_429_rate,
            date_429=u[10] < f.date_429_rate,
            remaining_noise=noise,
        )
