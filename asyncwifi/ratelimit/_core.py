"""What the server said, as sans-I/O state: pauses, remaining counts, object quotas, pacing.

``RateCore`` takes the time as an argument and returns *effects* (pause everyone, switch a
window to paced mode, lower a limit) for the asyncio scheduler to carry out; it never
sleeps or logs. The sliding-window logs themselves live in the store.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._limits import DAY, WindowSpec

__all__ = ["Effect", "ObjectState", "RateCore", "grid_end"]

#: a sequence number no admission reaches
_NEVER = 1 << 62

EffectKind = Literal["pause", "paced", "exact", "limit", "exhausted", "object"]


def grid_end(t: float, period: float) -> float:
    """End of the clock-aligned fixed window of ``period`` that contains ``t``.

    gateway.md: the gateway's windows are aligned to the clock in UTC (the minute at :00,
    the day at 00:00 UTC); on the clock's epoch time line those are multiples of the period.
    """
    return (math.floor(t / period) + 1.0) * period


@dataclass(frozen=True, slots=True)
class Effect:
    """Something the scheduler must do (and log) after an observation."""

    kind: EffectKind
    name: str
    until: float | None
    reason: str
    count: int | None = None


@dataclass(slots=True)
class ObjectState:
    """A per-object daily quota as last reported by the server (lowered only within a day)."""

    limit: int | None
    remaining: int | None
    window_end: float
    blocked_until: float = -math.inf


class RateCore:
    """Server truth layered over the local logs; every method takes ``now``."""

    __slots__ = (
        "_caps",
        "cap_floor",
        "day_period",
        "max_reset",
        "objects",
        "paced_reason",
        "paced_recovery",
        "paced_until",
        "pause_reason",
        "pause_until",
        "recent",
        "seq",
        "server_limits",
        "shortest",
        "specs",
    )

    def __init__(self, specs: Sequence[WindowSpec], *, paced_recovery: float = 60.0) -> None:
        #: the configured windows by name
        self.specs = {s.name: s for s in specs}
        #: the shortest window (the one a 429 without detail is blamed on)
        self.shortest: WindowSpec | None = min(specs, key=lambda s: s.period, default=None)
        day = self.specs.get("day")
        #: the period objects' quotas and the day quota reset on (00:00 UTC)
        self.day_period = day.period if day is not None else DAY
        longest = max((s.span for s in specs), default=DAY)
        #: the longest wait a server may order; longer values are clamped (garbage)
        self.max_reset = max(DAY + 60.0, longest)
        #: paced mode lasts this many periods of the paced window after the last surprise
        self.paced_recovery = paced_recovery
        #: admissions so far (this process); a permit carries its own number
        self.seq = 0
        self.recent: deque[float] = deque(maxlen=2048)
        #: no admission before this time (a 429 named a reset)
        self.pause_until = -math.inf
        self.pause_reason = ""
        #: window name -> (window end, admissions allowed while seq < this)
        self._caps: dict[str, tuple[float, int]] = {}
        #: no cap can block while seq < cap_floor (a cheap test for the hot path)
        self.cap_floor = _NEVER
        #: limits the server reported lower than configured
        self.server_limits: dict[str, int] = {}
        #: window name -> time paced mode ends
        self.paced_until: dict[str, float] = {}
        self.paced_reason = ""
        #: object name -> what the server said of its daily quota
        self.objects: dict[str, ObjectState] = {}

    # -- admission -------------------------------------------------------------------------

    def gate(self, now: float, objects: str | None = None) -> tuple[float, str]:
        """Earliest time the server's state allows an admission, and why (``""`` if now)."""
        t, why = now, ""
        if self.pause_until > t:
            t, why = self.pause_until, "pause"
        caps = self._caps
        if caps and self.seq >= self.cap_floor:
            expired: list[str] = []
            seq = self.seq
            for name, (end, max_seq) in caps.items():
                if now >= end:
                    expired.append(name)
                elif seq >= max_seq and end >= t:
                    t, why = end, name  # on a tie the spent window is the better reason
            if expired:
                for name in expired:
                    del caps[name]
                self._refloor()
        if objects is not None and self.objects:
            o = self.objects.get(objects)
            if o is not None and o.blocked_until > now:
                b = o.blocked_until
                if b > t:
                    t, why = b, f"object:{objects}"
        return t, why

    def admitted(self, now: float) -> int:
        """Count an admission made at ``now``; returns its sequence number."""
        self.seq += 1
        self.recent.append(now)
        return self.seq

    def tick(self, now: float) -> list[Effect]:
        """Leave paced mode for windows whose recovery time has passed."""
        out: list[Effect] = []
        for name, until in list(self.paced_until.items()):
            if now >= until:
                del self.paced_until[name]
                out.append(Effect("exact", name, None, "no unexpected 429 for the recovery time"))
        return out

    def count(self, name: str) -> int:
        spec = self.specs[name]
        return min(spec.count, self.server_limits.get(name, spec.count))

    def server_view(self, name: str, now: float) -> tuple[int, float] | None:
        """(remaining, window end) if the server's figure for ``name`` is in force."""
        cap = self._caps.get(name)
        if cap is None or now >= cap[0]:
            return None
        return max(0, cap[1] - self.seq), cap[0]

    def caps(self, now: float) -> list[tuple[int, float]]:
        """(admissions still allowed, window end) for every server cap in force."""
        return [(ms - self.seq, end) for end, ms in self._caps.values() if now < end]

    # -- observation -----------------------------------------------------------------------

    def seq_at(self, sent_at: float) -> int:
        """Sequence number of the earliest own admission at or after ``sent_at``.

        Used when a response comes without its permit: assuming the request went out as
        early as possible counts every later admission against what the server said remains.
        """
        c = 0
        for t in reversed(self.recent):
            if t < sent_at:
                break
            c += 1
        return self.seq - c + 1 if c else self.seq

    def observe(
        self,
        now: float,
        status: int,
        h: RateLimitHeaders,
        *,
        sent_at: float,
        seq: int | None = None,
    ) -> list[Effect]:
        """Apply one response (status and parsed headers) of a request sent at ``sent_at``."""
        if seq is None:
            seq = self.seq_at(sent_at)
        out: list[Effect] = []
        spent_before = {
            name for name, (end, ms) in self._caps.items() if now < end and self.seq >= ms
        }
        # gateway.md: a limit lower than configured is a different subscription: adopt it
        for name, spec in self.specs.items():
            lim = h.limits.get(name)
            if lim is not None and 1 <= lim < self.count(name):
                self.server_limits[name] = lim
                out.append(
                    Effect(
                        "limit",
                        name,
                        None,
                        f"server reports {lim} per {name}, configured {spec.count}",
                        count=lim,
                    )
                )
        # gateway.md: remaining counts may only lower the local estimate inside a window
        for name in self.specs:
            rem = h.remaining.get(name)
            if rem is None:
                continue
            end = self._window_end(name, sent_at, now, h)
            if end is None:
                continue
            self._cap(name, end, seq + rem)
            if rem <= 0 and name == "day" and "day" not in spent_before:
                out.append(Effect("exhausted", "day", end, "server reports no day quota left"))
        for oname, counts in h.objects.items():
            self._object(oname, counts.limit, counts.remaining, sent_at, now)
        if status == 429:
            out.extend(self._on_429(now, h, seq, spent_before))
        return out

    def _window_end(
        self, name: str, sent_at: float, now: float, h: RateLimitHeaders
    ) -> float | None:
        period = self.specs[name].period
        if period >= self.day_period:
            reset = h.reset_for(name)
            if reset is not None and reset > 0:
                return now + min(reset, self.max_reset)
        end = grid_end(sent_at, period)
        if grid_end(now, period) != end:
            return None  # the response crossed a window boundary: which window it counts is unknown
        return end

    def _cap(self, name: str, end: float, max_seq: int) -> None:
        old = self._caps.get(name)
        # an earlier end names an older window: the newer window's cap stays
        if old is None or end > old[0] or (end == old[0] and max_seq < old[1]):
            self._caps[name] = (end, max_seq)
            self._refloor()

    def _refloor(self) -> None:
        self.cap_floor = min((ms for _, ms in self._caps.values()), default=_NEVER)

    def _object(
        self, name: str, limit: int | None, remaining: int | None, sent_at: float, now: float
    ) -> None:
        end = grid_end(sent_at, self.day_period)
        o = self.objects.get(name)
        if o is None or end > o.window_end:
            o = self.objects[name] = ObjectState(limit, remaining, end)
        else:
            if limit is not None:
                o.limit = limit if o.limit is None else min(o.limit, limit)
            if remaining is not None:
                o.remaining = remaining if o.remaining is None else min(o.remaining, remaining)
        if o.remaining is not None and o.remaining <= 0:
            o.blocked_until = max(o.blocked_until, o.window_end)

    def _on_429(
        self, now: float, h: RateLimitHeaders, seq: int, spent_before: set[str]
    ) -> list[Effect]:
        out: list[Effect] = []
        delay = h.delay(now)
        if delay is not None:
            delay = min(delay, self.max_reset) if delay > 0 else None
        spent = [p for p in h.spent_periods() if p in self.specs]
        spent_objects = h.spent_objects()
        if spent_objects and not spent:
            # gateway.md: an object quota was spent; only requests for that object wait
            for oname in spent_objects:
                o = self.objects[oname]
                o.blocked_until = now + delay if delay is not None else o.window_end
                out.append(
                    Effect("object", oname, o.blocked_until, f"429: no {oname} quota left today")
                )
            return out
        blamed = spent[0] if spent else (self.shortest.name if self.shortest else "")
        if delay is not None:
            until, source = now + delay, "the server's reset"
        else:
            period = self.specs[blamed].period if blamed in self.specs else 60.0
            until, source = grid_end(now, period), f"the end of the {blamed} window"
        if until > self.pause_until:
            self.pause_until = until
            self.pause_reason = f"429 ({blamed or 'rate'} limit): paused until {source}"
            out.append(Effect("pause", blamed, until, self.pause_reason))
        if blamed in self.specs and self.specs[blamed].period >= self.day_period:
            self._cap(blamed, until, seq)
            if blamed not in spent_before:
                out.append(Effect("exhausted", blamed, until, "429: the day quota is spent"))
            return out
        if blamed and blamed not in spent_before:
            spec = self.specs[blamed]
            # recovery counts from the end of the pause, so that paced admissions happen
            self.paced_until[blamed] = (
                max(now, self.pause_until) + self.paced_recovery * spec.period
            )
            self.paced_reason = (
                f"unexpected 429 on the {blamed} limit while the local log had room: the server"
                f" counts differently (sliding or weighted windows); admissions are now spaced"
                f" {spec.span / self.count(blamed):.3g}s apart"
            )
            out.append(Effect("paced", blamed, self.paced_until[blamed], self.paced_reason))
        return out
