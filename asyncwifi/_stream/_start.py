"""When a new scroll may start: only when its next request could be admitted in time.

A scroll's id lives ``window`` seconds (spec §3): a scroll started when the limiter could
not send its continuation within half of that would lapse. The streams wait on this rule
before a fresh query, and the backfill pauses on it when the day's quota is the reason.
"""

from __future__ import annotations

from asyncwifi.ratelimit import Lane, Scheduler

__all__ = ["scroll_start_wait"]


def scroll_start_wait(scheduler: Scheduler, now: float, window: float) -> float:
    """Seconds until a new scroll could be kept alive (its next request admitted within half
    its ``window``), 0.0 if now: the one rule the streams and the backfill wait on."""
    deadline = now + window * 0.5
    if scheduler.earliest_admission(Lane.SCROLL, deadline=deadline) <= deadline:
        return 0.0
    return scheduler.earliest_admission(Lane.SCROLL) - now
