"""What the server said, as sans-I/O state: pauses, remaining counts, object quotas, pacing.

``ServerTruth`` takes the time as an argument and returns events (pause, paced mode, a lower
limit) for the scheduler to carry out and log. A remaining count becomes a *cap*, "at most
``r`` more admissions until ``end``", the end placed by what the server said
(``RateLimit-Reset``), not by the clock grid, so it holds for fixed windows on any clock and
for sliding or weighted ones. Inside a cap a newer report may only lower it. When a cap
ends, one *probe* goes and its response sets the next cap; unanswered, it lapses after the
shortest span.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._limits import DAY, Limits, WindowSpec
from asyncwifi.ratelimit._snapshot import ThrottleEvent, fmt_time

__all__ = ["NOW", "ObjectState", "Reason", "ServerTruth", "grid_end"]

_NEVER = 1 << 62  # a sequence number no admission reaches
_log = logging.getLogger("asyncwifi.ratelimit")


class Reason(NamedTuple):
    """Why an admission waits (``kind``: "" nothing, "pause" a 429's reset, "window" the
    log, "cap" a remaining count, "probe" a cap's end, "object" an object's quota,
    "keepalive" an open scroll's place) and the window or object it names."""

    kind: str = ""
    name: str = ""


NOW = Reason()


@dataclass(slots=True)
class _Cap:
    """At most ``max_seq`` admissions (by sequence number) before ``end``; a ``probe`` cap
    (after a cap the server placed ended) lets one more go, and the first report on a
    request sent at or after ``since`` replaces it; a cap on the clock grid just ends."""

    end: float
    max_seq: int
    probe: bool = False
    since: float = -math.inf
    then_probe: bool = True


@dataclass(slots=True)
class ObjectState:
    """A per-object daily quota as last reported by the server (lowered only within a day)."""

    limit: int | None
    remaining: int | None
    window_end: float
    blocked_until: float = -math.inf


def _low(old: int | None, new: int | None) -> int | None:
    return old if new is None else new if old is None else min(old, new)


def grid_end(t: float, period: float) -> float:
    """End of the clock-aligned window of ``period`` holding ``t`` (gateway.md: windows are
    aligned in UTC, the minute at :00 and the day at 00:00: multiples on the epoch line)."""
    return (math.floor(t / period) + 1.0) * period


class ServerTruth:
    """Server truth layered over the local log; every method takes ``now``."""

    def __init__(self, specs: Sequence[WindowSpec], limits: Limits, paced_recovery: float) -> None:
        self.specs = {s.name: s for s in specs}  # a count the server reports lower is lowered
        self.shortest = min(specs, key=lambda s: s.period, default=None)  # a bare 429's blame
        self.day_period = self.specs["day"].period if "day" in self.specs else DAY  # objects'
        self.max_reset = max([DAY + 60.0, *(s.span for s in specs)])  # longer waits: garbage
        self.paced_recovery = paced_recovery  # in periods of the paced window
        #: a quota window that frees within this horizon is pacing, not a spent quota
        self._pacing = max((s.span for s in specs if not s.quota), default=0.0)
        self.limits = limits  # on a spent quota: wait (at most max_wait s), or raise
        self._noted = -math.inf  # the reset a wait was last noted for
        self.seq = 0  # admissions so far (this process); a permit carries its own number
        self.recent: deque[float] = deque(maxlen=2048)  # their times, the latest
        self.pause_until = -math.inf  # no admission before this time (a 429 named a reset)
        self._caps: dict[str, _Cap] = {}
        self.probe_span = self.shortest.span if self.shortest is not None else 60.0
        self.cap_floor = _NEVER  # no cap can block while seq < cap_floor (the hot path's test)
        self.paced_until: dict[str, float] = {}  # window -> when its paced mode ends
        self.objects: dict[str, ObjectState] = {}  # object -> its daily quota, as reported

    def gate(self, now: float, objects: str | None = None) -> tuple[float, Reason]:
        """Earliest time the server's state allows an admission, and why (``NOW`` if now)."""
        t, why = now, NOW
        if self.pause_until > t:
            t, why = self.pause_until, Reason("pause")
        if self._caps and self.seq >= self.cap_floor:
            for name in list(self._caps):
                c = self._current(name, now)
                if c is not None and self.seq >= c.max_seq and c.end >= t:
                    # on a tie the spent window is the better reason
                    t, why = c.end, Reason("probe" if c.probe else "cap", name)
        if objects is not None and (o := self.objects.get(objects)) and o.blocked_until > t:
            t, why = o.blocked_until, Reason("object", objects)
        return t, why

    def exhausted(self, now: float, t: float, why: Reason) -> QuotaExhaustedError | None:
        """The error to raise if waiting until ``t`` for ``why`` is for a spent quota (an
        object's, or a quota window's past the short windows' span) the policy will not
        wait for; a wait it will is logged once per reset."""
        spec = self.specs.get(why.name)
        window = why.kind in ("window", "cap") and spec is not None and spec.quota
        if t <= now or not (why.kind == "object" or (window and t - now > self._pacing)):
            return None
        what = f"{why.name} quota" if window else f"{why.name} object quota"
        back = f"{fmt_time(t)} (in {t - now:.0f} s)"
        max_wait = self.limits.max_wait
        if self.limits.on_exhausted == "wait" and (max_wait is None or t - now <= max_wait):
            if window and t > self._noted:
                self._noted = t
                _log.warning("%s spent: requests wait until %s", what, back)
            return None
        msg = f"the {what} is spent; it is expected back at {back}; nothing was sent"
        return QuotaExhaustedError(msg, reset_at=t, limit=why.name)

    def _current(self, name: str, now: float) -> _Cap | None:
        """The cap of ``name`` at ``now``: an ended cap becomes a probe, a lapsed probe goes."""
        c = self._caps.get(name)
        if c is None or now < c.end:
            return c
        if c.probe or not c.then_probe:
            del self._caps[name]
            self._refloor()
            return None
        # one more than admitted so far (a cap lowered by a late report may be below that)
        probe = _Cap(c.end + self.probe_span, max(c.max_seq, self.seq) + 1, True, c.end)
        self._caps[name] = probe
        self._refloor()
        return probe if now < probe.end else self._current(name, now)

    def _refloor(self) -> None:
        self.cap_floor = min((c.max_seq for c in self._caps.values()), default=_NEVER)

    def tick(self, now: float) -> list[ThrottleEvent]:
        """Leave paced mode for windows whose recovery time has passed."""
        out = []
        for name, until in list(self.paced_until.items()):
            if now >= until:
                del self.paced_until[name]
                why = f"back to exact mode on the {name} limit: no unexpected 429 for a while"
                out.append(ThrottleEvent("exact", now, name, None, why))
        return out

    def caps(self, now: float) -> dict[str, tuple[int, float]]:
        """Window -> (admissions still allowed, cap end) for every server cap in force."""
        current = ((name, self._current(name, now)) for name in list(self._caps))
        return {n: (c.max_seq - self.seq, c.end) for n, c in current if c and not c.probe}

    def observe(
        self, now: float, status: int, h: RateLimitHeaders, *, sent_at: float, seq: int | None
    ) -> list[ThrottleEvent]:
        """Apply one response (status and parsed headers) of a request sent at ``sent_at``;
        without its ``seq``, every own admission since ``sent_at`` counts against it."""
        if seq is None:
            later = sum(1 for _ in itertools.takewhile(sent_at.__le__, reversed(self.recent)))
            seq = self.seq - later + 1 if later else self.seq
        out: list[ThrottleEvent] = []
        spent_before = {
            n
            for n, c in self._caps.items()
            if now < c.end and self.seq >= c.max_seq and not c.probe
        }
        for name, spec in self.specs.items():
            # gateway.md: a limit lower than configured is a different subscription: adopt it
            lim = h.limits.get(name)
            if lim is not None and 1 <= lim < spec.count:
                why = f"lowering the {name} limit: server reports {lim}, configured {spec.count}"
                spec.count = lim
                out.append(ThrottleEvent("limit", now, name, None, why, lim))
            # gateway.md: remaining counts may only lower the local estimate inside a window
            rem = h.remaining.get(name)
            placed = None if rem is None else self._window_end(name, sent_at, now, h)
            if rem is None or placed is None:
                continue
            self._cap(name, _Cap(placed[0], seq + rem, then_probe=placed[1]), sent_at, now)
            if rem <= 0 and spec.quota and name not in spent_before:
                why = f"server reports no {name} quota left"
                out.append(ThrottleEvent("exhausted", now, name, placed[0], why))
        for oname, counts in h.objects.items():
            self._object(oname, counts.limit, counts.remaining, sent_at)
        if status == 429:
            out.extend(self._on_429(now, h, seq, spent_before))
        return out

    def _window_end(
        self, name: str, sent_at: float, now: float, h: RateLimitHeaders
    ) -> tuple[float, bool] | None:
        """Until when a remaining count of ``name`` holds at most, and whether the server said:
        ``RateLimit-Reset`` (when it describes this period) counted from ``now``, the safe
        side; else the clock-aligned window, unless the response crossed its boundary."""
        reset = h.reset_for(name)
        if reset is not None and reset > 0:
            return now + min(reset, self.max_reset), True
        end = grid_end(sent_at, self.specs[name].period)
        return (end, False) if grid_end(now, self.specs[name].period) == end else None

    def _cap(self, name: str, new: _Cap, sent_at: float, now: float) -> None:
        """Apply a report ("at most ``max_seq`` before ``end``"): inside a cap, only lower it."""
        old = self._current(name, now)
        if old is None or (old.probe and sent_at >= old.since):
            self._caps[name] = new  # first report, or the probe's answer
        elif old.probe or new.max_seq >= old.max_seq:
            return  # a report from before the cap's end, or no lower than the cap
        else:
            old.max_seq, old.end = new.max_seq, max(old.end, new.end)
            old.then_probe = old.then_probe or new.then_probe
        self._refloor()

    def _object(self, name: str, limit: int | None, remaining: int | None, sent_at: float) -> None:
        end = grid_end(sent_at, self.day_period)
        o = self.objects.get(name)
        if o is None or end > o.window_end:
            o = self.objects[name] = ObjectState(limit, remaining, end)
        else:
            o.limit, o.remaining = _low(o.limit, limit), _low(o.remaining, remaining)
        if o.remaining is not None and o.remaining <= 0:
            o.blocked_until = max(o.blocked_until, o.window_end)

    def _on_429(
        self, now: float, h: RateLimitHeaders, seq: int, spent_before: set[str]
    ) -> list[ThrottleEvent]:
        out: list[ThrottleEvent] = []
        delay = h.delay(now)
        delay = min(delay, self.max_reset) if delay is not None and delay > 0 else None
        spent = [p for p in h.spent_periods() if p in self.specs]
        if h.spent_objects() and not spent:
            # gateway.md: an object quota was spent; only requests for that object wait
            for oname in h.spent_objects():
                o = self.objects[oname]
                o.blocked_until = now + delay if delay is not None else o.window_end
                why = f"429: no {oname} quota left today"
                out.append(ThrottleEvent("object", now, oname, o.blocked_until, why))
            return out
        blamed = spent[0] if spent else (self.shortest.name if self.shortest else "")
        spec = self.specs.get(blamed)
        if delay is not None:
            until, source = now + delay, "the server's reset"
        else:
            until = grid_end(now, spec.period if spec else 60.0)
            source = f"the end of the {blamed} window"
        if until > self.pause_until:
            self.pause_until = until
            why = f"429 ({blamed or 'rate'} limit): paused until {source}"
            out.append(ThrottleEvent("pause", now, blamed, until, why))
        if spec is not None and spec.quota:
            # a spent day holds until the server's reset, whatever an earlier report said
            cur = self._current(blamed, now)
            if cur is not None and not cur.probe:
                until, seq = max(until, cur.end), min(seq, cur.max_seq)
            self._caps[blamed] = _Cap(until, seq)
            self._refloor()
            if blamed not in spent_before:
                out.append(
                    ThrottleEvent(
                        "exhausted", now, blamed, until, f"429: the {blamed} quota is spent"
                    )
                )
        elif spec is not None and blamed not in spent_before:
            # recovery counts from the end of the pause, so that paced admissions happen
            end = max(now, self.pause_until) + self.paced_recovery * spec.period
            self.paced_until[blamed] = end
            why = (
                f"unexpected 429 on the {blamed} limit while the local log had room: the server"
                " counts differently (sliding or weighted windows); admissions are now spaced"
                f" {spec.span / spec.count:.3g}s apart"
            )
            out.append(ThrottleEvent("paced", now, blamed, end, why))
        return out
