"""What the simulator saw: counters for tests and benchmarks (``sim.counters``)."""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

__all__ = ["Counters"]


@dataclass(eq=False)
class Counters:
    """Counts of everything the simulator answered, and the peaks of admitted traffic.

    "Admitted" means let through by the gateway's request limits (what spends quota). The
    peaks count the client's own admitted requests, not the hidden competitor's.
    """

    #: every request received (dropped-before-the-gateway ones included)
    requests: int = 0
    #: requests by route, e.g. ``"GET /v1/organizations/{cid}/events"``
    by_endpoint: Counter[str] = field(default_factory=Counter)
    #: responses by HTTP status (dropped connections are not responses)
    responses_by_status: Counter[int] = field(default_factory=Counter)
    #: requests admitted by the gateway's minute/day limits
    admitted: int = 0
    #: 429s from the minute/day limits
    rate_limited: int = 0
    #: bodyless 429s from an object limit (the request *was* executed)
    object_limited: int = 0
    #: successful logins
    logins: int = 0
    #: logins refused with 401
    login_failures: int = 0
    tokens_issued: int = 0
    #: tokens revoked by logout (early revocations by a fault are in ``faults``)
    tokens_revoked: int = 0
    #: 403s on a token, by reason: missing, malformed, signature, expired, revoked
    auth_failures: Counter[str] = field(default_factory=Counter)
    #: scroll sessions opened (contacts and events)
    scrolls_started: int = 0
    #: pages served from a scroll id (continuations)
    scroll_pages: int = 0
    #: requests that carried an expired scroll id
    expired_scroll_hits: int = 0
    #: requests that carried an unknown scroll id (or an already used one, single-use mode)
    unknown_scroll_hits: int = 0
    #: events and contacts sent in response bodies
    events_served: int = 0
    contacts_served: int = 0
    #: spec §8: objects (records returned, created, edited or deleted) by kind, and by route
    #: (``"GET /v1/organizations/{cid}/events"``), of every request the API executed; only
    #: kinds and routes that exchanged some are listed
    objects_served: Counter[str] = field(default_factory=Counter)
    objects_by_endpoint: Counter[str] = field(default_factory=Counter)
    #: the most requests admitted in any sliding window of 60 clock seconds
    max_in_any_window: int = 0
    #: the most requests admitted in one clock minute (UTC-aligned)
    max_in_clock_minute: int = 0
    #: the most requests admitted in any sliding window of one clock day
    max_in_any_day_window: int = 0
    #: the most requests admitted in one UTC day
    max_in_clock_day: int = 0
    #: requests spent by the hidden competitor (a fault)
    competitor_hits: int = 0
    #: injected faults by kind: error, drop_before, drop_after, truncated, html_429, spike,
    #: revocation
    faults: Counter[str] = field(default_factory=Counter)
    #: webhooks posted by ``emit_webhook`` and their statuses
    webhooks_sent: int = 0
    webhook_statuses: Counter[int] = field(default_factory=Counter)
    #: clock times of the client's admitted requests (also ``sim.admissions``)
    admissions: list[float] = field(default_factory=list, repr=False)
    _minute: deque[float] = field(default_factory=deque, repr=False)
    _day: deque[float] = field(default_factory=deque, repr=False)
    _minute_key: float = field(default=-1.0, repr=False)
    _minute_count: int = field(default=0, repr=False)
    _day_key: float = field(default=-1.0, repr=False)
    _day_count: int = field(default=0, repr=False)

    def admit(self, t: float) -> None:
        """Record one admitted request at clock time ``t`` and update the peaks."""
        self.admitted += 1
        self.admissions.append(t)
        for window, length, attr in (
            (self._minute, 60.0, "max_in_any_window"),
            (self._day, 86_400.0, "max_in_any_day_window"),
        ):
            window.append(t)
            horizon = t - length
            while window[0] <= horizon:
                window.popleft()
            if len(window) > getattr(self, attr):
                setattr(self, attr, len(window))
        key = t // 60.0
        if key != self._minute_key:
            self._minute_key, self._minute_count = key, 0
        self._minute_count += 1
        self.max_in_clock_minute = max(self.max_in_clock_minute, self._minute_count)
        day = t // 86_400.0
        if day != self._day_key:
            self._day_key, self._day_count = day, 0
        self._day_count += 1
        self.max_in_clock_day = max(self.max_in_clock_day, self._day_count)

    def summary(self) -> dict[str, object]:
        """The counters as a plain dict (peaks and totals; no admission log)."""
        return {
            k: (dict(v) if isinstance(v, Counter) else v)
            for k, v in vars(self).items()
            if not k.startswith("_") and k != "admissions"
        }
