"""What the server said, as sans-I/O state: pauses, remaining counts, object quotas, pacing.

``ServerTruth`` takes the time as an argument and returns events (:class:`ThrottleEvent`:
pause, paced mode, a lower limit) for the scheduler to carry out and log; its gate answers
when an admission may go and why (:class:`Wait`). A remaining count becomes a *cap*, "at most
``r`` more admissions until ``end``", the end placed by what the server said
(``RateLimit-Reset``), not by the clock grid, so it holds for fixed windows on any clock and
for sliding or weighted ones. Inside a cap a newer report may only lower it. When a cap
ends, one *probe* goes and its response sets the next cap; unanswered, it lapses after the
shortest span. A cold start probes too: an admission after a shortest span without any
(the first one, or after a pause) whose store knew of no other in that span either (a
fresh ``MemoryStore``, a Redis log without the key's history) goes alone: the key may have
been spent elsewhere meanwhile (a worker killed mid-minute), and its answer's remaining
counts cap the rest; an answer without them (or none) lets them go as before. A login
is not the probe (its route is often unmetered: its answer may carry no counts): the
request after it is.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from asyncwifi._instant import fmt_time
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._limits import DAY, Limits, WindowSpec

__all__ = [
    "NOW",
    "PARKED",
    "Headroom",
    "ObjectState",
    "Reason",
    "ServerTruth",
    "ThrottleEvent",
    "Wait",
    "grid_end",
]

_NEVER = 1 << 62  # a sequence number no admission reaches
_log = logging.getLogger("asyncwifi.ratelimit")


class Reason(NamedTuple):
    """Why an admission waits (``kind``: "" nothing, "pause" a 429's reset, "window" the
    log, "cap" a remaining count, "probe" a cap's end, "object" an object's quota, "month"
    the month's object allowance, "keepalive" an open scroll's place) and the window, object
    or allowance it names."""

    kind: str = ""
    name: str = ""


NOW = Reason()
#: the kinds of wait that hold no one else up: an object's daily quota
PARKED = frozenset({"object"})


class Wait:
    """When an admission may go (``until``, a clock time) and what holds it back till then."""

    __slots__ = ("until", "why")

    def __init__(self, until: float, why: Reason = NOW) -> None:
        self.until = until
        self.why = why

    def __repr__(self) -> str:
        return f"Wait({self.until!r}, {self.why!r})"


class Headroom(NamedTuple):
    """A server cap in force: at most ``left`` more admissions until clock time ``end``."""

    left: int
    end: float


ThrottleKind = Literal[
    "pause", "paced", "exact", "limit", "exhausted", "object", "fallback", "restored"
]


@dataclass(frozen=True, slots=True)
class ThrottleEvent:
    """Passed to ``on_throttle`` whenever the scheduler slows down, stops or recovers."""

    kind: ThrottleKind
    at: float
    name: str = ""
    until: float | None = None
    reason: str = ""
    count: int | None = None


@dataclass(slots=True)
class _Cap:
    """At most ``max_seq`` admissions (by sequence number) before ``end``."""

    end: float
    max_seq: int
    then_probe: bool = True  # the server placed the end: a probe follows it (else: the grid)
    #: a probe: the end of the cap it follows; a report on a request sent since answers it
    probe_from: float | None = None
    cold: bool = False  # the cold start's probe: ends with its request (``probed``)


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

    def __init__(
        self,
        specs: Sequence[WindowSpec],
        limits: Limits,
        paced_recovery: float,
        blank: Callable[[float, int], bool] | None = None,
    ) -> None:
        self.specs = {s.name: s for s in specs}  # a count the server reports lower is lowered
        shortest = min(specs, key=lambda s: s.period, default=None)
        self.blame = shortest.name if shortest is not None else ""  # a bare 429's window
        self.probe_span = shortest.span if shortest is not None else 60.0
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
        self.cap_floor = _NEVER  # no cap can block while seq < cap_floor (the hot path's test)
        #: the cold start (module doc): the store's answer to "did the shortest window hold
        #: no other admission?", asked when the admission after the probe looks
        self._blank = blank
        self.probe = 0  # the admission probing a cold start, until it ends
        self._cold = -math.inf  # its time, while the store is still to be asked
        self._after_login = False  # a cold start's login went: the next admission probes
        self._quiet = 0  # admissions since the last quiet span (the probe's own in the log)
        self._probe_own = 1  # of which, when the probe went
        self.paced_until: dict[str, float] = {}  # window -> when its paced mode ends
        self.objects: dict[str, ObjectState] = {}  # object -> its daily quota, as reported

    def gate(self, now: float, objects: str | None = None) -> Wait | None:
        """Earliest time the server's state allows an admission, and why; None: now."""
        t, why = now, NOW
        if self.pause_until > t:
            t, why = self.pause_until, Reason("pause")
        if self.seq >= self.cap_floor:  # (cap_floor is _NEVER without caps, or cold)
            self._settle(now)
            for name, c in self._caps.items():
                if self.seq >= c.max_seq and c.end >= t:
                    # on a tie the spent window is the better reason
                    t, why = c.end, Reason("cap" if c.probe_from is None else "probe", name)
        if objects is not None and (o := self.objects.get(objects)) and o.blocked_until > t:
            t, why = o.blocked_until, Reason("object", objects)
        return None if why is NOW else Wait(t, why)

    def exhausted(self, now: float, wait: Wait, allowance: str = "") -> QuotaExhaustedError | None:
        """The error to raise if ``wait`` is for a spent quota (an object's, the month's
        object allowance, said in ``allowance``, or a quota window's past the short windows'
        span) the policy will not wait for; a wait it will is logged once per reset."""
        t, why = wait.until, wait.why
        spec = self.specs.get(why.name)
        window = why.kind in ("window", "cap") and spec is not None and spec.quota
        spent = why.kind in ("object", "month") or (window and t - now > self._pacing)
        if t <= now or not spent:
            return None
        if why.kind == "month":
            what = allowance or "the month's object allowance"
            limit = "month" if why.name == "all" else f"month:{why.name}"
        else:
            what = f"the {why.name} quota" if window else f"the {why.name} object quota"
            limit = why.name
        back = f"{fmt_time(t)} (in {t - now:.0f} s)"
        max_wait = self.limits.max_wait
        if self.limits.on_exhausted == "wait" and (max_wait is None or t - now <= max_wait):
            if (window or why.kind == "month") and t > self._noted:
                self._noted = t
                _log.warning("%s spent: requests wait until %s", what, back)
            return None
        msg = f"{what} is spent; it is expected back at {back}; nothing was sent"
        return QuotaExhaustedError(msg, reset_at=t, limit=limit)

    def _settle(self, now: float) -> None:
        """Bring the caps to ``now`` (an ended cap the server placed becomes a probe, others go)
        and ``cap_floor`` with them: neither lowers a ``max_seq``, so a stale floor is safe."""
        for name, c in list(self._caps.items()):
            if now >= c.end and c.then_probe and c.probe_from is None:
                # one more than admitted so far (a cap lowered by a late report may be below that)
                seq = max(c.max_seq, self.seq) + 1
                c = self._caps[name] = _Cap(c.end + self.probe_span, seq, probe_from=c.end)
            if now >= c.end:
                del self._caps[name]
        if self._cold > -math.inf and self._blank is not None:  # a cold start: ask the store
            t, self._cold = self._cold, -math.inf
            if self.probe and self._blank(self.probe_span, self._probe_own):
                for name in self.specs:  # none goes before its answer (or its end)
                    old = self._caps.get(name)
                    if old is None or old.probe_from is not None:
                        self._caps[name] = _Cap(t + self.probe_span, self.probe, False, t, True)
        self.cap_floor = min((c.max_seq for c in self._caps.values()), default=_NEVER)

    def arrived(self, seq: int, at: float, tag: str) -> None:
        """Admission ``seq`` (``tag``) at ``at``: a cold start's probe when it follows a
        shortest span without any. A login is never the probe: gateways often leave the
        auth route unmetered, so its answer may say nothing of what the key spent; the
        first request after it probes instead."""
        recent = self.recent
        if not recent or at - recent[-1] > self.probe_span:
            self._quiet = 0  # this scheduler's admissions since its quiet span
        self._quiet += 1
        if self._quiet == 1 or self._after_login:
            self._after_login = tag == "login"
            if not self._after_login:
                self.cold(seq, at)
        recent.append(at)

    def cold(self, seq: int, at: float) -> None:
        """Admission ``seq``, at ``at``, follows a shortest span without any of this
        scheduler's: it probes unless the store knew of others (module doc)."""
        if self._blank is not None:
            self.probe, self._cold, self._probe_own = seq, at, max(1, self._quiet)
            self.cap_floor = min(self.cap_floor, seq)

    def probed(self) -> None:
        """The cold start's probe ended (answered or not): the log decides what it did not."""
        self.probe, self._cold = 0, -math.inf
        if any(c.cold for c in self._caps.values()):
            self._caps = {n: c for n, c in self._caps.items() if not c.cold}
        self.cap_floor = min((c.max_seq for c in self._caps.values()), default=_NEVER)

    def _spent(self, now: float) -> set[str]:
        """Windows whose server cap admits no more before its end."""
        return {name for name, room in self.caps(now).items() if room.left <= 0}

    def tick(self, now: float) -> list[ThrottleEvent]:
        """Leave paced mode for windows whose recovery time has passed."""
        out = []
        for name, until in list(self.paced_until.items()):
            if now >= until:
                del self.paced_until[name]
                why = f"back to exact mode on the {name} limit: no unexpected 429 for a while"
                out.append(ThrottleEvent("exact", now, name, None, why))
        return out

    def caps(self, now: float) -> dict[str, Headroom]:
        """Window -> what its server cap in force still allows, and until when."""
        self._settle(now)
        return {
            n: Headroom(c.max_seq - self.seq, c.end)
            for n, c in self._caps.items()
            if c.probe_from is None
        }

    def observe(
        self, now: float, status: int, h: RateLimitHeaders, *, sent_at: float, seq: int | None
    ) -> list[ThrottleEvent]:
        """Apply one response (status and parsed headers) of a request sent at ``sent_at``;
        without its ``seq``, the first own admission since ``sent_at`` (else the last) is it."""
        if seq is None:
            later = sum(1 for _ in itertools.takewhile(sent_at.__le__, reversed(self.recent)))
            seq = self.seq + 1 - max(1, later)
        out: list[ThrottleEvent] = []
        spent_before = self._spent(now)
        for name, spec in self.specs.items():
            # gateway.md: a limit lower than configured is a different subscription: adopt it
            if 0 < (lim := h.limits.get(name, 0)) < spec.count:
                why = f"lowering the {name} limit: server reports {lim}, configured {spec.count}"
                spec.count = lim
                out.append(ThrottleEvent("limit", now, name, None, why, lim))
            # gateway.md: remaining counts may only lower the local estimate inside a window
            if (rem := h.remaining.get(name)) is None:
                continue
            if reset := h.reset_for(name):  # counted from now, the safe side
                self._cap(name, _Cap(now + min(reset, self.max_reset), seq + rem), sent_at)
            elif grid_end(now, spec.period) == (end := grid_end(sent_at, spec.period)):
                self._cap(name, _Cap(end, seq + rem, then_probe=False), sent_at)
            # else the response crossed the window's boundary: its count is of the one before
        for oname, got in h.objects.items():
            end = grid_end(sent_at, self.day_period)
            o = self.objects.get(oname)
            if o is None or end > o.window_end:  # a new day starts from what the server says
                o = self.objects[oname] = ObjectState(None, None, end)
            o.limit, o.remaining = _low(o.limit, got.limit), _low(o.remaining, got.remaining)
            if o.remaining is not None and o.remaining <= 0:
                o.blocked_until = max(o.blocked_until, o.window_end)
        if status == 429:
            out.extend(self._on_429(now, h, seq, spent_before))
        newly = self._spent(now) - spent_before  # by a report or a 429
        for name, spec in self.specs.items():
            if spec.quota and name in newly:
                why = f"server reports no {name} quota left"
                out.append(ThrottleEvent("exhausted", now, name, self._caps[name].end, why))
        self._settle(now)  # cap_floor now counts the caps just set
        return out

    def _cap(self, name: str, new: _Cap, sent_at: float) -> None:
        """Apply a report ("at most ``max_seq`` before ``end``"): inside a cap, only lower it."""
        old = self._caps.get(name)
        if old is None or (old.probe_from is not None and sent_at >= old.probe_from):
            self._caps[name] = new  # first report, or the probe's answer
        elif old.probe_from is None and new.max_seq < old.max_seq:
            old.max_seq, old.end = new.max_seq, max(old.end, new.end)
            old.then_probe = old.then_probe or new.then_probe
        # else a report from before the probe's cap ended, or no lower than the cap

    def _on_429(
        self, now: float, h: RateLimitHeaders, seq: int, spent_before: set[str]
    ) -> list[ThrottleEvent]:
        """A 429: only an object's requests wait if its quota was spent, else everyone pauses,
        a spent quota window is capped until its reset, and a 429 no cap expected paces."""
        out: list[ThrottleEvent] = []
        delay = h.delay(now)
        reset_at = now + min(delay, self.max_reset) if delay else None  # 0: none named
        spent = [p for p in h.spent_periods() if p in self.specs]
        if h.spent_objects() and not spent:
            # gateway.md: an object quota was spent; only requests for that object wait
            for oname in h.spent_objects():
                o = self.objects[oname]
                o.blocked_until = o.window_end if reset_at is None else reset_at
                why = f"429: no {oname} quota left today"
                out.append(ThrottleEvent("object", now, oname, o.blocked_until, why))
            return out
        blamed = spent[0] if spent else self.blame
        spec = self.specs.get(blamed)
        until = grid_end(now, spec.period if spec else 60.0) if reset_at is None else reset_at
        if until > self.pause_until:
            self.pause_until = until
            source = f"the end of the {blamed} window" if reset_at is None else "the server's reset"
            why = f"429 ({blamed or 'rate'} limit): paused until {source}"
            out.append(ThrottleEvent("pause", now, blamed, until, why))
        if spec is not None and spec.quota:
            # a spent day holds until the server's reset, whatever an earlier report said
            cur = self._caps.get(blamed)
            if cur is not None and cur.probe_from is None:
                until, seq = max(until, cur.end), min(seq, cur.max_seq)
            self._caps[blamed] = _Cap(until, seq)
        elif spec is not None and blamed not in spent_before:
            # recovery counts from the end of the pause, so that paced admissions happen
            end = self.paced_until[blamed] = self.pause_until + self.paced_recovery * spec.period
            why = (
                f"unexpected 429 on the {blamed} limit while the local log had room: the server"
                " counts differently (sliding or weighted windows); admissions are now spaced"
                f" {spec.span / spec.count:.3g}s apart"
            )
            out.append(ThrottleEvent("paced", now, blamed, end, why))
        return out
