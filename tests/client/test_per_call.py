"""The per-call door (issue 42), over real HTTP against the simulator: a view of the client
with its own options (``with_options``: ``max_wait`` an admission deadline, ``lane``,
``timeout``, ``retry``) sharing the session, token and limiter; the raw response beside the
typed result (``with_raw_response``); any endpoint through the limiter and the object count
(``client.request``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from asyncwifi import Contact, Limit, Limits, RetryPolicy
from asyncwifi._clock import ScaledClock, SystemClock
from asyncwifi.errors import ClientStateError, QuotaExhaustedError, ValidationError
from asyncwifi.ratelimit import Lane
from asyncwifi.testing import Simulator
from tests.client._support import client_for

GET_CONTACT = "GET /v2/customers/{cid}"


async def test_beside_a_full_minute_a_call_with_max_wait_answers_in_time_or_not_at_all() -> None:
    # a backfill keeps the minute full; 100 people's calls may wait 2 s each: each returns
    # or raises within 2 s (+0.2), none is sent after its deadline, no 429. Real time, from
    # a second past a UTC minute: the window stays spent for the whole test
    clock = ScaledClock(1.0, start=(time.time() // 60) * 60 + 1)
    async with Simulator(clock=clock, minute_limit=20, contacts=30) as sim:
        api = client_for(sim, limits=Limits(minute=Limit(20, 60.0)))
        async with api:
            bulk = api.with_options(lane="bulk")
            await api.login()

            async def backfill() -> None:
                while True:
                    await bulk.segments.list()

            saturating = asyncio.create_task(backfill())
            while await api.scheduler.used("segments", window="minute") < 19:
                await asyncio.sleep(0.01)
            cids = [c["cid"] for c in sim.data.contacts[:100]] * 4
            person = api.with_options(max_wait=2)

            async def one(cid: str) -> tuple[str, float, float, object]:
                start = time.monotonic()
                try:
                    got: object = await person.contacts.get(cid)
                except QuotaExhaustedError as exc:
                    got = exc
                return cid, start, time.monotonic() - start, got

            calls = await asyncio.gather(*(one(c) for c in cids[:100]))
            saturating.cancel()
            await asyncio.gather(saturating, return_exceptions=True)
        assert max(took for _, _, took, _ in calls) <= 2.2
        sent = [got for *_, got in calls if isinstance(got, Contact)]
        refused = [got for *_, got in calls if isinstance(got, QuotaExhaustedError)]
        assert len(sent) + len(refused) == 100
        assert refused, "the minute was full: some calls could not be admitted in 2 s"
        for exc in refused:
            assert exc.limit == "max_wait"
            assert "max_wait=2 s" in str(exc)
        # a refused call was never sent: the server answered exactly the calls that returned
        assert sim.counters.by_endpoint[GET_CONTACT] == len(sent)
        assert sim.counters.responses_by_status[429] == 0


async def test_max_wait_refuses_at_once_when_the_limiter_already_knows() -> None:
    limits = Limits(minute=Limit(3, 60.0))
    clock = ScaledClock(1.0, start=(time.time() // 60) * 60 + 1)  # the minute stays spent
    async with (
        Simulator(clock=clock, minute_limit=3) as sim,
        client_for(sim, limits=limits) as api,
    ):
        for _ in range(2):  # the login and these: the minute is spent
            await api.segments.list()
        start = time.monotonic()
        with pytest.raises(QuotaExhaustedError, match=r"max_wait=5 s") as caught:
            await api.with_options(max_wait=5).segments.list()
        assert time.monotonic() - start < 2.0  # told at once, not after the 5 s
        assert caught.value.reset_at > api.clock.now() + 5  # when it could have gone
        assert sim.counters.requests == 3


async def test_a_view_shares_the_session_token_and_count_and_lives_with_its_client() -> None:
    async with Simulator(clock=SystemClock(), contacts=5, segments=2) as sim:
        api = client_for(sim)
        view = api.with_options(timeout=5, retry=RetryPolicy(max_attempts=1), lane="interactive")
        async with api:
            await view.segments.list()
            await api.segments.list()
            await view.contacts.with_options(max_wait=1).get(sim.data.contacts[0]["cid"])
            assert api.logins == view.logins == 1  # one token
            assert await api.scheduler.used("segments") == 2  # one count
            assert view.state is api.state
            with pytest.raises(ClientStateError, match="with the client it was made from"):
                await view.aclose()
        assert view.state.value == "closed"
        with pytest.raises(ClientStateError):
            view.contacts  # noqa: B018  the client closed: its views with it


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_wait": -1}, "max_wait must be"),
        ({"max_wait": float("nan")}, "max_wait must be"),
        ({"timeout": 0}, "timeout must be"),
        ({"retry": 3}, "retry must be a RetryPolicy"),
        ({"lane": "urgent"}, "lane must be"),
    ],
)
async def test_bad_options_are_refused_before_any_request(
    options: dict[str, Any], message: str
) -> None:
    async with Simulator(clock=SystemClock()) as sim:
        async with client_for(sim) as api:
            with pytest.raises(ValidationError, match=message):
                api.with_options(**options)
            with pytest.raises(ValidationError, match=message):
                api.contacts.with_options(**options)
        assert sim.counters.requests == 0


async def test_a_lane_given_by_name_is_the_lane() -> None:
    async with Simulator(clock=SystemClock()) as sim:
        api = client_for(sim)
        assert api.with_options(lane="bulk")._api.options.lane is Lane.BULK


async def test_the_raw_response_shows_the_headers_and_parses_to_the_contact() -> None:
    async with Simulator(clock=SystemClock(), contacts=3) as sim, client_for(sim) as api:
        cid = sim.data.contacts[0]["cid"]
        raw = await api.contacts.with_raw_response.get(cid)
        assert raw.status == 200
        assert raw.headers["X-Ratelimit-Remaining-Minute"].isdigit()
        assert raw.rate_limit.remaining["minute"] == int(
            raw.headers["X-Ratelimit-Remaining-Minute"]
        )
        assert raw.elapsed > 0
        contact = raw.parse()
        assert isinstance(contact, Contact)
        assert contact == await api.contacts.get(cid)
        assert raw.json()  # the body as it came
        with pytest.raises(ValidationError, match="a stream has no one response"):
            await api.contacts.with_raw_response.list()


async def test_any_endpoint_goes_through_the_limiter_and_the_object_count() -> None:
    # the reference names accountings without describing them: the generic request
    async with Simulator(clock=SystemClock(), contacts=20) as sim, client_for(sim) as api:
        served_before = sum(sim.counters.objects_served.values())
        counted: list[int] = []
        for contact in sim.data.contacts[:20]:
            raw = await api.request(
                "GET", f"/v2/customers/{contact['cid']}/accountings", objects="contacts"
            )
            assert raw.status == 200
            counted.append(len(raw.parse()["accountings"]))
        assert sum(counted) > 0
        assert await api.scheduler.used("contacts") == 20  # admitted under its kind
        assert await api.scheduler.objects("contacts") == sum(counted)
        served = sum(sim.counters.objects_served.values()) - served_before
        assert served == sum(counted)  # what the server counted, to the object
        raw = await api.request("GET", "/v2/segments/organizations/" + api.organization)
        assert raw.status == 200
        assert raw.request_id


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("FETCH", "/v2/x"), "method must be one of"),
        (("GET", "v2/x"), "path must be the API's path"),
        (("GET", "https://example.com/v2/x"), "path must be the API's path"),
        (("GET", "/v2/x?a=1"), "without a query"),
    ],
)
async def test_a_bad_generic_request_is_refused_before_any_request(
    args: tuple[str, str], message: str
) -> None:
    async with Simulator(clock=SystemClock()) as sim:
        async with client_for(sim) as api:
            with pytest.raises(ValidationError, match=message):
                await api.request(*args)
            with pytest.raises(ValidationError, match="a GET sends no body"):
                await api.request("GET", "/v2/x", json={"a": 1})
            with pytest.raises(ValidationError, match="objects must be"):
                await api.request("GET", "/v2/x", objects="two words")
        assert sim.counters.requests == 0


async def test_a_limited_stream_reads_no_object_past_its_limit() -> None:
    async with Simulator(clock=SystemClock(), contacts=300, events=1_000) as sim:
        async with client_for(sim) as api:
            five = [c async for c in api.contacts.list(has_email=True, limit=5)]
            assert len(five) == 5
            assert sim.counters.objects_served["contacts"] == 5  # one page of five
            # events past a page: 100, 100, then a restart from the time cursor asks for the
            # 50 left and the record of its boundary's millisecond, which it reads again
            got = [e async for e in api.events.list(size=100, limit=250)]
            assert len(got) == len({e.id for e in got}) == 250
            assert sim.counters.objects_served["events"] == 251
            assert [e.id for e in got] == sim.data.event_ids()[:250]
            assert await api.scheduler.objects("events") == 251
            with pytest.raises(ValidationError, match="limit"):
                api.contacts.list(limit=0)
        assert sim.counters.by_endpoint["GET /v2/customers/organizations/{cid}"] == 1
