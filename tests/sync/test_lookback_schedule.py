"""The lookback's schedule, sans-I/O (``asyncwifi.engine._lookback``): on a simulated
timeline of polls, every event that appears at most the lookback after its own time is
read after it appeared (by the forward read or a lookback), every one up to twice the
lookback at least by the audit; never two re-reads in one poll; no event time re-read
twice by the lookback (each event costs one forward read and one final re-read: spec §8
counts every record returned); and the lookback's one rule of validation."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from asyncwifi.cli import main
from asyncwifi.engine._lookback import Lookback, Reread, lookback_of
from asyncwifi.engine._rereads import Delivered, Rereads
from asyncwifi.errors import ValidationError
from asyncwifi.sync import SyncOptions

T0 = 1_700_000_000.0
SETTLE = 60.0


def at_of(now: float) -> datetime:
    """The cursor of a feed caught up at ``now``: the horizon, ``settle`` behind."""
    return datetime.fromtimestamp(now - SETTLE, UTC)


def timeline(
    span: float, poll: float, every: float, polls: int
) -> tuple[list[Reread], list[tuple[float, datetime, datetime]], int]:
    """Run the schedule over ``polls`` polls of a caught-up feed; returns the re-reads,
    the forward reads (when, from, to) and the most re-reads planned at one poll."""
    schedule = Lookback(span, every=every, at=at_of(T0), now=T0)
    rereads: list[Reread] = []
    forward: list[tuple[float, datetime, datetime]] = []
    at, most = at_of(T0), 0
    for k in range(1, polls + 1):
        now = T0 + k * poll
        planned = 0
        plan = schedule.next(now, at)
        if plan is not None:
            rereads.append(plan)
            schedule.done(plan)
            planned += 1
            assert plan.start <= plan.end < at
        most = max(most, planned)
        forward.append((now, at, at_of(now)))
        at = at_of(now)
        schedule.forward(at)  # the forward read delivered everything before the horizon
    return rereads, forward, most


def found_at(
    t: datetime,
    appeared: float,
    rereads: list[Reread],
    forward: list[tuple[float, datetime, datetime]],
) -> tuple[str, float] | None:
    """What first reads an event dated ``t`` after it appeared, and when."""
    hits: list[tuple[str, float]] = [
        (r.kind, r.planned) for r in rereads if r.planned >= appeared and r.start <= t <= r.end
    ]
    hits += [("forward", when) for when, lo, hi in forward if when >= appeared and lo <= t <= hi]
    return min(hits, key=lambda hit: hit[1], default=None)


@pytest.mark.parametrize(
    ("span", "poll", "every"),
    [(600.0, 1.0, 30.0), (600.0, 60.0, 30.0), (120.0, 7.0, 30.0), (3600.0, 300.0, 30.0)],
)
def test_every_event_up_to_the_lookback_late_is_read_after_it_appeared(
    span: float, poll: float, every: float
) -> None:
    polls = math.ceil(8 * span / poll)  # the events below, their audits included
    rereads, forward, most = timeline(span, poll, every, polls)
    assert most == 1  # never two re-reads in one poll
    # one request per re-read while the window holds less than a page: at most one a poll,
    # and a lookback about every ``every`` (or every poll, when polls are further apart)
    # once the first span of event time is a span old
    lookbacks = [r for r in rereads if r.kind == "lookback"]
    assert len(rereads) <= polls
    assert len(lookbacks) >= (polls * poll - span) / max(every + poll, 2 * poll) - 2
    # the lookbacks read back to back: no event time twice (an event costs two reads)
    for before, after in itertools.pairwise(lookbacks):
        assert after.start == before.end + timedelta(milliseconds=1)
    # each lookback reads only what is a span old when it is sent
    for r in lookbacks:
        assert r.end.timestamp() <= r.planned - span
    audits = [r for r in rereads if r.kind == "audit"]
    # the audits read one span at a time, back to back, never twice the same time
    for before, after in itertools.pairwise(audits):
        assert after.start == before.end + timedelta(milliseconds=1)
    assert len(audits) >= 6 * span // span - 4
    # events dated over the middle of the run, appearing up to 2.5 spans late
    step = span / 37
    for i in range(int(2 * span / step)):
        t = datetime.fromtimestamp(T0 + 2 * span + i * step + 0.123, UTC)
        for lateness in (0.0, SETTLE + 1, span / 2, span - 1, span, span + 1, 1.5 * span, 2 * span):
            appeared = t.timestamp() + lateness
            hit = found_at(t, appeared, rereads, forward)
            assert hit is not None, (t, lateness)
            kind, when = hit
            if kind == "forward":  # not late: once it is ``settle`` old
                assert when - appeared <= SETTLE + poll, (t, lateness)
            elif lateness <= span:  # by the final re-read of its time: a span after it
                assert kind == "lookback", (t, lateness)
                assert when - t.timestamp() <= span + max(every, poll) + poll, (t, lateness)
            elif lateness <= 2 * span:
                assert kind in ("lookback", "audit"), (t, lateness)


def test_a_first_run_rereads_nothing_before_since_and_a_restart_the_span_before_it() -> None:
    at = at_of(T0)
    fresh = Lookback(600, every=30, at=at, now=T0, fresh=True)
    assert fresh.next(T0, at) is None  # nothing before ``since`` (and nothing behind yet)
    # a restart with a checkpoint of before the watermark: the span before the cursor,
    # up to what is a span old now, then the rest as it becomes a span old
    resumed = Lookback(600, every=30, at=at, now=T0)
    plan = resumed.next(T0, at)
    assert plan is not None
    assert plan.kind == "lookback"
    start, old = at - timedelta(seconds=600), datetime.fromtimestamp(T0 - 600, UTC)
    assert (plan.start, plan.end) == (start, old - timedelta(milliseconds=1))
    assert resumed.unverified(plan.start)
    assert not resumed.unverified(at)
    resumed.done(plan)
    assert resumed.next(T0 + 29, at) is None  # the next one is due ``every`` later
    later = resumed.next(T0 + 600, at)
    assert later is not None
    assert (later.start, later.end) == (old, at - timedelta(milliseconds=1))
    # a restart from a checkpoint that saved the watermark goes on from it
    saved = datetime.fromtimestamp(T0 - 630, UTC)
    again = Lookback(600, every=30, at=at, now=T0, reread_from=saved).next(T0, at)
    assert again is not None
    assert again.start == saved
    off = Lookback(0, every=30, at=at, now=T0)
    assert off.next(T0 + 10_000, at_of(T0 + 10_000)) is None


def test_a_feed_catching_up_rereads_nothing_ahead_of_itself_and_keeps_little() -> None:
    schedule = Lookback(600, every=30, at=at_of(T0 - 86_400), now=T0)
    at = at_of(T0 - 86_400)
    plans = []
    for k in range(200):  # a day behind: each window an hour, a poll every 10 s
        plan = schedule.next(T0 + 10 * k, at)
        if plan is not None:
            plans.append(plan)
            schedule.done(plan)
        at = min(at + timedelta(hours=1), at_of(T0 + 10 * k))
        schedule.forward(at)
    # the first lookback (the span before the checkpoint), then none until caught up: what
    # the forward read reaches long after its time needs no re-read
    assert [p.kind for p in plans][:1] == ["lookback"]
    caught_up = [p for p in plans[1:] if p.start < at_of(T0 - 3600)]
    assert not caught_up
    assert schedule.oldest >= at_of(T0 + 2000) - timedelta(seconds=3 * 600 + 60)


def test_delivered_forgets_what_no_reread_asks_for_again() -> None:
    seen = Delivered()
    base = datetime.fromtimestamp(T0, UTC)
    seen.add(["a", "b", "c"], [base, base + timedelta(seconds=1), base + timedelta(seconds=2)])
    seen.add(["b"], [base + timedelta(seconds=9)])  # delivered already: kept once
    seen.forget(base + timedelta(seconds=2))
    assert "a" not in seen
    assert "b" not in seen
    assert "c" in seen
    assert len(seen) == 1


@pytest.mark.parametrize("bad", [-1, -0.5, 86_401, math.nan, math.inf, True, "600", None])
def test_the_lookback_is_checked_by_one_rule_before_anything_is_sent(bad: object) -> None:
    with pytest.raises(ValidationError, match="lookback must be from 0"):
        lookback_of(bad)
    with pytest.raises(ValidationError, match="lookback must be from 0"):
        SyncOptions(lookback=bad)  # type: ignore[arg-type]
    assert lookback_of(0) == 0.0
    assert lookback_of(7_200) == 7_200.0
    assert SyncOptions().lookback == 600.0


def test_a_feed_catching_up_keeps_no_ids_it_will_not_compare_with() -> None:
    now = T0 + 86_400
    rereads = Rereads(600, every=30, at=at_of(T0), now=now, fresh=False, stored=None)
    first = rereads.due(now, at_of(T0))
    assert first is not None  # the span before the checkpoint, re-read once
    rereads.schedule.done(first)
    base = at_of(T0)
    for hour in range(20):  # the day behind, read an hour at a time
        stop = base + timedelta(hours=hour + 1)
        rereads.forward(stop + timedelta(milliseconds=1))  # the span, complete
        rereads.remember([f"e{hour}-{i}" for i in range(500)], [stop] * 500, stop, [])
        assert rereads.due(now + 30 * (hour + 1), stop) is None  # nothing behind to re-read
        assert rereads.delivered is not None
        assert len(rereads.delivered) == 0  # read a day late: no re-read compares with it


@pytest.mark.parametrize("value", ["2d", "-5m", "soon"])
def test_the_command_refuses_a_bad_lookback_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    db = tmp_path / "x.db"
    code = main(["--simulate", "sync", "--to", f"sqlite:///{db}", "--once", "--lookback", value])
    assert code == 2
    assert "--lookback" in capsys.readouterr().err
    assert not db.exists()
