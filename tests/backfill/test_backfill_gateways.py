"""Events backfills behind gateways that count differently (DESIGN "The simulator is not the
API"): sliding windows (strict: 60 in any 60 s) and fixed windows on a gateway clock 23 s
off ours (skewed), on the flat records (no time: the exact id fallback) and the vendor's
nested ones (a UTC time cursor).

The documented limits on both sides (60 a minute), a job that needs about twice that, over
real HTTP in scaled time (50x: the run's two clock minutes last about 1.5 s). Each run must
write every event exactly once, never be refused (0 x 429), never let a scroll lapse while
it waits for the gateway, and spend no more than the request floor plus a small constant.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import Limit, Limits, ScaledClock
from asyncwifi.backfill import events_backfill
from asyncwifi.testing import Simulator
from tests.client._support import client_for

SINCE = datetime(2024, 1, 1, tzinfo=UTC)
UNTIL = datetime(2024, 1, 3, tzinfo=UTC)
#: clock seconds per real second: slow enough that event-loop lag on a loaded 2-core machine
#: (tens of ms) stays well inside the client's 1 s margin (20 ms here) most of the time, and
#: a 60-request burst spans clock seconds, fast enough that two clock minutes last ~2.5 s
SPEED = 50.0
#: 15 s before a UTC minute: the first burst lands late in a minute, where a client that
#: counted in windows aligned on its own clock would send a second burst a few seconds later
#: (refused by the sliding gateway, and by the skewed one whose minute starts at our :37)
START = 1_709_294_400.0 - 15.0
#: ~6,700 events in [SINCE, UNTIL) in pages of 60: about 112 requests, nearly two minutes'
#: worth, so the minute limit binds (the job cannot be done in one burst)
EVENTS = 10_000
PAGE = 60
SCROLLS = 4  # events_backfill's default concurrency: four slices, four scrolls at once


def gateway(model: str, shape: str, **options: Any) -> Simulator:
    """The simulator behind a gateway ``model``, serving ``shape`` records, on our clock."""
    return Simulator(
        clock=ScaledClock(SPEED, start=START),
        events=EVENTS,
        events_start=SINCE,
        events_end=SINCE + timedelta(days=3),
        event_shape=shape,
        rate_limit_mode=model,
        **options,
    )


def ids_in(path: Path) -> Counter[str]:
    records = (json.loads(line) for line in path.read_bytes().splitlines())
    return Counter(r["event"]["id"] if "event" in r else r["id"] for r in records)


@pytest.mark.parametrize("shape", ["flat", "nested"])
@pytest.mark.parametrize("model", ["sliding", "skewed"])
async def test_a_backfill_behind_the_gateway_is_exact_never_refused_and_near_the_floor(
    tmp_path: Path, model: str, shape: str
) -> None:
    server = gateway(model, shape)  # the documented 60 a minute and 15,000 a day
    out = tmp_path / "events.jsonl"
    # the client's default limits: the same documented 60 a minute, 15,000 a day
    async with server, client_for(server) as api:
        job = events_backfill(
            api, since=SINCE, until=UNTIL, out=out, state=tmp_path / "state", page_size=PAGE
        )
        outcome = await job.run()
        admitted_by_client = api.quota.admitted
    assert outcome.status == "done"
    expected = Counter(server.data.event_ids(SINCE, UNTIL - timedelta(milliseconds=1)))
    assert ids_in(out) == expected  # every event, each once

    counters = server.counters
    assert counters.rate_limited == 0
    assert counters.expired_scroll_hits == 0  # no scroll lapsed while the gateway was full
    # what the gateway saw, the login aside, is what the job counted
    spent = counters.requests - counters.logins
    assert counters.logins == 1
    assert spent == outcome.progress.requests_run
    assert admitted_by_client == counters.admitted == counters.requests
    # the limit did bind: more than a minute's worth of requests, spread over more than
    # a minute (else this would be a test of nothing but the burst)
    assert counters.admitted > 60

    # DESIGN "The request floor": every page, plus one closing request per scroll
    floor = -(-expected.total() // PAGE) + SCROLLS
    # + SCROLLS at most: a scroll may spend one request more than its share of the floor,
    # either a page cut in two at its slice's boundary (a short page on each side) or a full
    # last page whose end is proved by a resume (two requests instead of one closing page)
    assert spent <= floor + SCROLLS


@pytest.mark.parametrize(("model", "shape"), [("fixed", "flat"), ("sliding", "nested")])
async def test_four_scrolls_at_once_under_a_small_minute_limit_never_lapse(
    tmp_path: Path, model: str, shape: str
) -> None:
    """Ten a minute for four concurrent scrolls (a key shared with other users, seen from
    here): the first burst (login, first pages, pages fetched ahead) fills the window, which
    frees 61 s after its oldest request, past the 57 s a scroll may wait. Each open scroll
    keeps a place for its next page (ratelimit/_keepalive.py), so none lapses: before that
    rule, 1 to 8 scrolls expired per run here, under every gateway, at 27-29 requests
    against a floor of 24."""
    server = gateway(model, shape, minute_limit=10)
    out = tmp_path / "events.jsonl"
    until = SINCE + timedelta(days=1)  # ~3,300 events: 34 pages, three clock minutes
    page = 100
    limits = Limits(minute=Limit(10, 60.0), day=Limit(15_000, 86_400.0))
    async with server, client_for(server, limits=limits) as api:
        job = events_backfill(
            api, since=SINCE, until=until, out=out, state=tmp_path / "state", page_size=page
        )
        outcome = await job.run()
    assert outcome.status == "done"
    expected = Counter(server.data.event_ids(SINCE, until - timedelta(milliseconds=1)))
    assert ids_in(out) == expected
    counters = server.counters
    assert counters.rate_limited == 0
    assert counters.expired_scroll_hits == 0
    spent = counters.requests - counters.logins
    floor = -(-expected.total() // page) + SCROLLS
    assert spent <= floor + SCROLLS  # as above: no request spent on a lapse
