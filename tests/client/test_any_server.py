"""Against a server that is legal but not ours (issue 33, items 1 to 5): the simulator behind
a proxy that writes what the reference allows and our simulator does not (counts as floats,
policy dates as epoch seconds, a 401 for a revoked token), or that repeats pages.

Every test runs over real HTTP (``tests/client/_other_server.py``) on a scaled clock.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from asyncwifi import Client, RetryPolicy, ScaledClock
from asyncwifi.errors import NotFoundError, ScrollExpiredError, UnauthorizedError
from asyncwifi.testing import Simulator
from tests.client._other_server import OtherServer, floats_for_ints
from tests.client._support import NO_LIMITS

SPEED = 100.0


def _sim(**options: Any) -> Simulator:
    options.setdefault("clock", ScaledClock(SPEED))
    options.setdefault("rate_limit_mode", "off")
    return Simulator(**options)


def _client(sim: Simulator, other: OtherServer, secret: str | None = None) -> Client:
    """A client of ``sim`` through ``other``, on the simulator's clock, with fast retries."""
    return Client(
        sim.client_key,
        secret or sim.client_secret,
        base_url=other.base_url,
        allow_http=True,
        clock=sim.clock,
        organization=sim.organization,
        limits=NO_LIMITS,
        retry=RetryPolicy(backoff_base=0.05, backoff_max=0.5),
    )


# -- 1. numbers written as floats ---------------------------------------------------------


@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_counts_written_as_floats_fail_no_page(shape: str) -> None:
    # spec §2: count, totalCount, size, logins, audience and the metrics are "number": a
    # server whose JSON writer writes 25.0 is legal, and every page must still be read
    async with (
        _sim(contacts=250, events=300, event_shape=shape) as sim,
        OtherServer(sim, rewrite=lambda _path, body: floats_for_ints(body)) as other,
        _client(sim, other) as api,
    ):
        contacts = api.contacts.list(size=100)
        got = [c async for c in contacts]
        events = api.events.list(size=100)
        seen = [e.id async for e in events]
        segments = await api.segments.list()
        hotspots = await api.hotspots.list()
    assert len({c.cid for c in got}) == 250
    assert contacts.errors == []
    assert events.errors == []
    assert contacts.total == 250
    assert isinstance(contacts.total, int)
    by_cid = {c["cid"]: c for c in sim.data.contacts}
    for contact in got:
        assert contact.logins == by_cid[contact.cid]["logins"]
        assert contact.metrics is not None
        assert (
            contact.metrics.count_total_visits == by_cid[contact.cid]["metrics"]["countTotalVisits"]
        )
    assert len(seen) == len(set(seen)) == 300
    assert [s.audience for s in segments] == [s["audience"] for s in sim.data.segments]
    assert len(hotspots) == len([h for h in sim.data.hotspots.values() if not h["deleted"]])


async def test_a_number_that_is_no_whole_number_costs_no_record_and_no_page() -> None:
    # a record's number of 2.5 is delivered as written; an envelope's totalCount of 250.5
    # is read as unknown (the scroll then ends on the empty page): no page is lost; a
    # number that is no number at all ("many") sets its contact aside, its path named
    def rewrite(path: str, body: Any) -> Any:
        if "customers" in body:
            body["totalCount"] = body["totalCount"] + 0.5
            for contact in body["customers"]:
                if contact["cid"] == bad:
                    contact["logins"] = "many"
                elif contact["cid"] == fractional:
                    contact["logins"] = 2.5
        return body

    async with _sim(contacts=250) as sim:
        bad = sim.data.contacts[120]["cid"]
        fractional = sim.data.contacts[7]["cid"]
        async with OtherServer(sim, rewrite=rewrite) as other, _client(sim, other) as api:
            stream = api.contacts.list(size=100)
            got = {c.cid: c async for c in stream}
    assert len(got) == 249
    assert bad not in got
    assert got[fractional].logins == 2.5
    [error] = stream.errors
    assert re.fullmatch(r"\$\.customers\[\d+\]\.logins", error.path)
    assert error.id == bad
    assert stream.total is None  # 250.5 is no count: unknown, and the page was read


# -- 2. a policy date as epoch seconds -----------------------------------------------------


async def test_a_policy_date_in_epoch_seconds_costs_no_contact() -> None:
    # spec §2.1: policies[].date is a "timestamp" with no type (webhooks write epoch seconds)
    def rewrite(path: str, body: Any) -> Any:
        for contact in body.get("customers", []):
            for k, policy in enumerate(contact["policies"]):
                moment = datetime.fromisoformat(policy["date"].replace("Z", "+00:00"))
                policy["date"] = moment.timestamp() if k == 0 else "soon"
        return body

    async with (
        _sim(contacts=120) as sim,
        OtherServer(sim, rewrite=rewrite) as other,
        _client(sim, other) as api,
    ):
        stream = api.contacts.list(size=100)
        got = [c async for c in stream]
    assert len(got) == 120
    assert stream.errors == []
    by_cid = {c["cid"]: c for c in sim.data.contacts}
    for contact in got:
        assert contact.policies is not None
        first, second = contact.policies[0], contact.policies[1]
        expected = datetime.fromisoformat(
            by_cid[contact.cid]["policies"][0]["date"].replace("Z", "+00:00")
        )
        assert isinstance(first.date, float)
        assert first.time == expected.astimezone(UTC)
        # a date that cannot be read as a time stays as the server wrote it, read as None
        assert second.date == "soon"
        assert second.time is None


# -- 3. a server that repeats pages --------------------------------------------------------


@pytest.mark.parametrize("how", ["replay", "ignore"])
async def test_a_contact_scroll_that_repeats_pages_delivers_each_once_and_stops(how: str) -> None:
    # a server that answers a continuation with the page it continues ("replay": the same
    # scroll id and records) or that ignores sId ("ignore": the first page, a new id)
    async with (
        _sim(contacts=250) as sim,
        OtherServer(sim, continuation=how) as other,
        _client(sim, other) as api,
    ):
        stream = api.contacts.list(size=100)
        got: list[str | None] = []

        async def read() -> None:
            async for contact in stream:
                got.append(contact.cid)

        with pytest.raises(ScrollExpiredError, match="repeats pages") as caught:
            await read()
    assert len(got) == len(set(got)) == 100
    assert caught.value.delivered == 100
    assert caught.value.total == 250
    assert stream.requests == 2  # the first page, and the continuation that repeated it


@pytest.mark.parametrize("how", ["replay", "ignore"])
@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_an_event_scroll_that_repeats_pages_delivers_each_once_and_stops(
    how: str, shape: str
) -> None:
    async with (
        _sim(events=500, event_shape=shape) as sim,
        OtherServer(sim, continuation=how) as other,
        _client(sim, other) as api,
    ):
        stream = api.events.list(size=100)
        got: list[str | None] = []

        async def read() -> None:
            async for event in stream:
                got.append(event.id)

        with pytest.raises(ScrollExpiredError, match="repeats pages"):
            await read()
    assert len(got) == len(set(got)) == 100
    assert stream.requests == 2


async def test_a_repeated_last_page_is_the_end_when_the_total_is_accounted_for() -> None:
    # 100 contacts in one page: totalCount says all are in, whatever the server repeats
    async with (
        _sim(contacts=100) as sim,
        OtherServer(sim, continuation="replay") as other,
        _client(sim, other) as api,
    ):
        stream = api.contacts.list(size=100)
        got = [c.cid async for c in stream]
    assert len(got) == len(set(got)) == 100
    assert stream.requests == 1


# -- 4. a 200 that holds no contact --------------------------------------------------------


@pytest.mark.parametrize("body", [{"status": "OK"}, {}, {"customer": None}, {"customer": {}}])
async def test_contacts_get_of_a_body_without_a_contact_is_not_found(body: Any) -> None:
    async with (
        _sim(contacts=5) as sim,
        OtherServer(sim, rewrite=lambda path, _b: body if path.count("/") == 3 else _b) as other,
        _client(sim, other) as api,
    ):
        cid = sim.data.contacts[0]["cid"]
        with pytest.raises(NotFoundError, match="holds no contact"):
            await api.contacts.get(cid)


# -- 5. a 401 to a revoked token -----------------------------------------------------------


def _401_for_a_refused_token(path: str, status: int, headers: dict[str, str]) -> int:
    """A gateway that answers 401 where the reference says 403 (a bad token)."""
    return 401 if status == 403 and not path.startswith("/v1/sts/login") else status


async def test_a_401_to_a_revoked_token_logs_in_once_more_and_retries() -> None:
    async with (
        _sim(contacts=5) as sim,
        OtherServer(sim, status=_401_for_a_refused_token) as other,
        _client(sim, other) as api,
    ):
        await api.segments.list()
        assert api.logins == 1
        sim.revoke_tokens()
        segments = await api.segments.list()  # 401, one new login, the same request again
        assert len(segments) == 6
        assert api.logins == 2
        assert other.count("/v2/segments") == 3


async def test_a_401_that_a_new_token_does_not_cure_is_raised_after_one_login() -> None:
    def refuse_segments(path: str, status: int, headers: dict[str, str]) -> int:
        return 401 if path.startswith("/v2/segments") else status

    async with (
        _sim(contacts=5) as sim,
        OtherServer(sim, status=refuse_segments) as other,
        _client(sim, other) as api,
    ):
        with pytest.raises(UnauthorizedError):
            await api.segments.list()
        assert api.logins == 2  # one login, one more after the 401: never a loop
        assert other.count("/v2/segments") == 2


async def test_a_401_from_the_login_itself_is_the_keys_fault() -> None:
    async with (
        _sim(contacts=5) as sim,
        OtherServer(sim) as other,
        _client(sim, other) as api,
        _client(sim, other, "not the secret") as wrong,
    ):
        with pytest.raises(UnauthorizedError):
            await wrong.segments.list()
        assert other.count("/v1/sts/login") == 1  # the login is not tried again
        await api.segments.list()
