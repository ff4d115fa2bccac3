"""The gateway (gateway.md, spec §7, §8, §9): limit headers, windows, 429s, object limits.

Most tests drive a hand-stepped clock so that every boundary is exact; one runs on a
ScaledClock started a known offset before a minute boundary.
"""

from __future__ import annotations

import pytest

from asyncwifi.testing import Faults
from tests._virtualclock import VirtualClock
from tests.simulator.conftest import CallerFactory
from tests.simulator.simhelpers import BOUNDARY, Answer, Caller

LIMIT_HEADERS = (
    "X-RateLimit-Limit-Minute",
    "X-RateLimit-Remaining-Minute",
    "X-RateLimit-Limit-Day",
    "X-RateLimit-Remaining-Day",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
)


def remaining(answer: Answer) -> tuple[int, int]:
    h = answer.headers
    return int(h["X-RateLimit-Remaining-Minute"]), int(h["X-RateLimit-Remaining-Day"])


async def segments(caller: Caller, **headers: str) -> Answer:
    return await caller.call(
        "GET", caller.org("/v2/segments/organizations/"), headers=headers or None
    )


async def test_limit_headers_and_request_id_on_every_response(make_caller: CallerFactory) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY + 15.2), login=False)
    org = caller.sim.organization
    answers = [
        await caller.call("POST", "/v1/sts/login/services", json_body={}, auth=False),  # 401
        await caller.get(f"/v2/segments/organizations/{org}"),  # 403 (no token)
        await caller.login(),  # 200
        await caller.get(f"/v2/segments/organizations/{org}"),  # 200
        await caller.get("/v3/hotspots/unknown"),  # 404
        await caller.call("PATCH", "/v3/hotspots"),  # 405
        await caller.get(f"/v1/organizations/{org}/events", size="0"),  # 409
        await caller.get(f"/v1/customers/organizations/{org}"),  # 410
        await caller.get("/no/such/route"),  # 404
    ]
    assert [a.status for a in answers] == [401, 403, 200, 200, 404, 405, 409, 410, 404]
    for n, answer in enumerate(answers, start=1):
        for name in LIMIT_HEADERS:
            assert name in answer.headers, (answer.status, name)
        assert remaining(answer) == (60 - n, 15_000 - n)
        assert answer.headers["RateLimit-Limit"] == "60"  # the minute is the tighter limit
        assert answer.headers["RateLimit-Remaining"] == str(60 - n)
        assert answer.headers["RateLimit-Reset"] == "45"  # 60 - floor(15.2)
        assert "Retry-After" not in answer.headers
        if answer.status >= 400:
            assert answer.json["message"]
    request_ids = [a.headers["X-Kong-Request-Id"] for a in answers]
    assert len(set(request_ids)) == len(request_ids)
    assert answers[-2].json == {"message": "This endpoint has been removed"}


async def test_fixed_windows_reset_on_the_clock_minute(make_caller: CallerFactory) -> None:
    clock = VirtualClock.stepping(BOUNDARY - 0.5)  # 11:59:59.5 UTC
    caller = await make_caller(clock=clock, minute_limit=5, login=False)
    assert (await caller.login()).status == 200
    answers = [await segments(caller) for _ in range(5)]
    assert [a.status for a in answers] == [200, 200, 200, 200, 429]
    refused = answers[-1]
    assert refused.json == {"message": "API rate limit exceeded"}
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["RateLimit-Reset"] == "1"
    assert remaining(refused) == (0, 15_000 - 5)  # a refused request does not count
    clock.set(BOUNDARY)  # 12:00:00: a new window, and five more fit at once
    answers = [await segments(caller) for _ in range(6)]
    assert [a.status for a in answers] == [200] * 5 + [429]
    assert remaining(answers[0]) == (4, 15_000 - 6)
    assert answers[-1].headers["Retry-After"] == "60"
    counters = caller.sim.counters
    assert counters.rate_limited == 2
    assert counters.admitted == 10
    assert counters.max_in_clock_minute == 5
    assert counters.max_in_any_window == 10  # 5 at :59.5 and 5 at :00, as the gateway allows
    assert caller.sim.admissions == [BOUNDARY - 0.5] * 5 + [BOUNDARY] * 5


async def test_a_fractional_retry_after_leads_into_the_next_fixed_window(
    make_caller: CallerFactory,
) -> None:
    """``fractional_reset``: Retry-After is the exact time to the boundary; sleeping it on
    the clock lands in the next UTC minute, which admits again (a clock that moves only
    when told to: the outcome never depends on how busy the machine is)."""
    boundary = BOUNDARY
    clock = VirtualClock.stepping(boundary - 20.0)
    caller = await make_caller(clock=clock, minute_limit=3, login=False, fractional_reset=True)
    sim = caller.sim
    assert (await caller.login()).status == 200
    clock.set(boundary - 12.75)
    first = [await segments(caller) for _ in range(3)]
    assert [a.status for a in first] == [200, 200, 429]
    wait = float(first[-1].headers["Retry-After"])
    assert wait == pytest.approx(12.75)
    await clock.sleep(wait)
    after = await segments(caller)
    assert after.status == 200
    assert remaining(after)[0] == 2
    assert sim.admissions[-1] >= boundary > sim.admissions[1]


async def test_sliding_mode_counts_any_window_of_a_minute(make_caller: CallerFactory) -> None:
    clock = VirtualClock.stepping(BOUNDARY - 0.5)
    caller = await make_caller(clock=clock, minute_limit=4, rate_limit_mode="sliding")
    assert [(await segments(caller)).status for _ in range(4)] == [200, 200, 200, 429]
    clock.set(BOUNDARY)  # a fixed window would start afresh here; a sliding one does not
    refused = await segments(caller)
    assert refused.status == 429
    assert refused.headers["Retry-After"] == "60"  # the oldest leaves at 12:00:59.5
    clock.set(BOUNDARY + 59.4)
    assert (await segments(caller)).headers["Retry-After"] == "1"
    clock.set(BOUNDARY + 59.5)
    assert (await segments(caller)).status == 200
    assert caller.sim.counters.max_in_any_window == 4


async def test_skewed_mode_aligns_windows_on_the_gateway_clock(
    make_caller: CallerFactory,
) -> None:
    # the gateway's clock is 20 s ahead: its minute starts at our :40
    clock = VirtualClock.stepping(BOUNDARY - 20.5)
    caller = await make_caller(
        clock=clock,
        minute_limit=2,
        rate_limit_mode="skewed",
        gateway_skew=20.0,
        fractional_reset=True,
        login=False,
    )
    assert (await segments(caller)).headers["RateLimit-Reset"] == "0.500"
    await segments(caller)
    refused = await segments(caller)
    assert (refused.status, refused.headers["Retry-After"]) == (429, "0.500")
    clock.set(BOUNDARY - 20)  # the gateway's new minute
    assert [(await segments(caller)).status == 429 for _ in range(3)] == [False, False, True]
    clock.set(BOUNDARY)  # our minute boundary means nothing to this gateway
    assert (await segments(caller)).status == 429


async def test_weighted_mode_punishes_a_burst_at_the_start_of_a_window(
    make_caller: CallerFactory,
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(
        clock=clock,
        minute_limit=4,
        rate_limit_mode="weighted",
        fractional_reset=True,
        login=False,
    )
    answers = [await segments(caller) for _ in range(4)]
    assert [a.status == 429 for a in answers] == [False] * 4  # counted before the token check
    # spent; room comes back once 4 * (1 - e / 60) <= 3 in the next window: at e = 15 s
    assert answers[-1].headers["RateLimit-Reset"] == "75.000"
    clock.set(BOUNDARY + 60)  # a fixed window would start afresh here
    refused = await segments(caller)
    assert (refused.status, refused.headers["Retry-After"]) == (429, "15.000")
    clock.set(BOUNDARY + 75)
    assert (await segments(caller)).status != 429
    assert (await segments(caller)).status == 429


async def test_refused_requests_count_when_asked(make_caller: CallerFactory) -> None:
    for count_refused, day_left in ((False, 100 - 3), (True, 100 - 6)):
        clock = VirtualClock.stepping(BOUNDARY + 1)
        caller = await make_caller(
            clock=clock, minute_limit=2, day_limit=100, count_refused=count_refused
        )
        answers = [await segments(caller) for _ in range(4)]  # login + 1, then 3 refused
        assert [a.status for a in answers] == [200, 429, 429, 429]
        clock.set(BOUNDARY + 61)
        after = await segments(caller)
        assert after.status == 200
        assert remaining(after)[1] == day_left, count_refused


async def test_off_mode_refuses_nothing_but_still_reports(make_caller: CallerFactory) -> None:
    caller = await make_caller(
        clock=VirtualClock.stepping(BOUNDARY), minute_limit=2, rate_limit_mode="off"
    )
    answers = [await segments(caller) for _ in range(5)]
    assert {a.status for a in answers} == {200}
    assert remaining(answers[-1])[0] == 0
    assert caller.sim.counters.rate_limited == 0


async def test_the_day_limit_resets_at_midnight_utc(make_caller: CallerFactory) -> None:
    midnight = 1_709_337_600.0  # 2024-03-02T00:00:00Z
    clock = VirtualClock.stepping(midnight - 3600)
    caller = await make_caller(clock=clock, day_limit=3)
    assert [(await segments(caller)).status for _ in range(3)] == [200, 200, 429]
    refused = await segments(caller)
    assert refused.headers["Retry-After"] == "3600"
    assert refused.headers["RateLimit-Limit"] == "3"  # the day is now the tighter limit
    clock.set(midnight)
    assert (await segments(caller)).status == 200


async def test_fractional_reset_values(make_caller: CallerFactory) -> None:
    clock = VirtualClock.stepping(BOUNDARY - 0.25)
    caller = await make_caller(clock=clock, minute_limit=2, fractional_reset=True)
    assert (await segments(caller)).headers["RateLimit-Reset"] == "0.250"
    refused = await segments(caller)
    assert refused.status == 429
    assert refused.headers["Retry-After"] == "0.250"


@pytest.mark.parametrize(
    ("accept", "content_type", "marker"),
    [
        ("application/json", "application/json", b'"message":"API rate limit exceeded"'),
        ("text/html", "text/html", b"<h1>Error</h1>"),
        ("text/html;q=0.5, application/json", "application/json", b'"message"'),
        ("application/xml", "application/xml", b"<message>API rate limit exceeded</message>"),
        ("text/plain", "text/plain", b"API rate limit exceeded\n"),
        ("*/*", "application/json", b'"message"'),
        ("image/png", "application/json", b'"message"'),
    ],
)
async def test_the_429_body_follows_accept(
    make_caller: CallerFactory, accept: str, content_type: str, marker: bytes
) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY), minute_limit=1)
    refused = await segments(caller, Accept=accept)
    assert refused.status == 429
    assert refused.headers["Content-Type"].startswith(content_type)
    assert marker in refused.body
    assert refused.headers["X-Kong-Request-Id"]


async def test_an_object_limit_executes_then_answers_a_bodyless_429(
    make_caller: CallerFactory,
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(clock=clock, object_limits={"hotspots": 2})
    sim = caller.sim
    body = {
        "venueId": "v1", "name": "AP", "routerType": "generic", "ssid": "Guests",
        "country": "IT", "address": "Via Roma 1", "city": "Milano", "zip": "20100",
    }  # fmt: skip
    ok = await caller.call("POST", "/v3/hotspots", json_body=body)
    assert ok.status == 201
    assert ok.headers["X-RateLimit-Limit-Hotspots-Day"] == "2"
    assert ok.headers["X-RateLimit-Remaining-Hotspots-Day"] == "1"
    events = await caller.get(caller.org("/v1/organizations/", "/events"), size="1")
    assert events.headers["X-RateLimit-Remaining-Hotspots-Day"] == "1"  # on every response
    listed = await caller.get(caller.org("/v3/hotspots/organizations/"))
    assert listed.status == 200  # 13 returned while 1 was left: allowed, then spent
    assert listed.headers["X-RateLimit-Remaining-Hotspots-Day"] == "0"
    before = len(sim.data.hotspots)
    write = await caller.call("POST", "/v3/hotspots", json_body=dict(body, name="AP 2"))
    assert write.status == 429
    assert write.body == b""  # no body: and yet the write happened
    assert len(sim.data.hotspots) == before + 1
    assert "Retry-After" not in write.headers
    assert sim.counters.object_limited == 1
    assert (await caller.get(caller.org("/v2/segments/organizations/"))).status == 200
    clock.step(86_400)  # the next UTC day (and a new token: the old one expired)
    assert (await caller.login()).status == 200
    assert (await caller.get(caller.org("/v3/hotspots/organizations/"))).status == 200


async def test_a_hidden_competitor_spends_the_same_quota(make_caller: CallerFactory) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(clock=clock, login=False)
    caller.sim.faults = Faults(hidden_competitor=30)  # one request every 2 clock seconds
    clock.set(BOUNDARY + 21)
    answer = await caller.login()
    assert remaining(answer)[0] == 60 - 10 - 1
    assert caller.sim.counters.competitor_hits == 10
    assert caller.sim.counters.admitted == 1  # the client's own


async def test_approximate_counters_jump_but_enforcement_is_exact(
    make_caller: CallerFactory,
) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY), minute_limit=20, login=False)
    caller.sim.faults = Faults(seed=3, remaining_jitter=4)
    answers = [await caller.login() for _ in range(21)]
    shown = [remaining(a)[0] for a in answers[:20]]
    exact = list(range(19, -1, -1))
    assert shown != exact
    assert all(abs(s - e) <= 4 for s, e in zip(shown, exact, strict=True))
    assert [a.status for a in answers].count(429) == 1
