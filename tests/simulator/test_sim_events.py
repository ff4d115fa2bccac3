"""Spec §4.5, §2.4 and §3: the events API, its scroll and its validation."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from asyncwifi.testing import Simulator
from tests._virtualclock import VirtualClock
from tests.simulator.conftest import CallerFactory
from tests.simulator.simhelpers import BOUNDARY, Caller

EVENTS = "/v1/organizations/"
SUB_OBJECT = {
    "visit": "visit",
    "signup": "signup",
    "send_email": "email",
    "open_email": "email",
    "click_email": "email",
    "send_sms": "sms",
    "click_sms": "sms",
    "survey": "survey",
    "promo": "promo",
}
SUB_OBJECTS = set(SUB_OBJECT.values())
NESTED_KEYS = {"organizationId", "customerId", "event", "where", "when"}


def ident(event: dict[str, Any]) -> str:
    """A record's id, whichever shape it came in."""
    return str(event["event"]["id"] if "event" in event else event["id"])


def kind(event: dict[str, Any]) -> str:
    return str(event["event"]["type"] if "event" in event else event["type"])


async def scroll_events(caller: Caller, **params: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every event of a scroll and the scrollIds seen (first request with enableScroll)."""
    path = caller.org(EVENTS, "/events")
    answer = await caller.get(path, enableScroll="true", **params)
    assert answer.status == 200, answer.body
    body = answer.json
    events, ids = list(body["events"]), [body["scrollId"]]
    while body["count"]:
        answer = await caller.get(path, scrollId=ids[-1])
        assert answer.status == 200
        body = answer.json
        events += body["events"]
        ids.append(body["scrollId"])
    return events, ids


async def test_a_scroll_returns_exactly_the_query_s_events(
    caller: Caller, simulator: Simulator
) -> None:
    start, end = "2024-01-03T00:00:00Z", "2024-01-20T12:00:00Z"
    events, ids = await scroll_events(
        caller, size="700", dateStart=start, dateEnd=end, sortBy="utcTime"
    )
    expected = simulator.data.event_ids(start, end)
    assert [ident(e) for e in events] == expected
    assert len(expected) > 2000
    assert len(set(ids)) == len(ids)  # a new scrollId on every page
    dates = [e["when"]["createdAt"] for e in events]
    assert dates == sorted(dates)
    assert start <= dates[0]
    assert dates[-1] <= end
    assert simulator.counters.scroll_pages == len(ids) - 1


@pytest.mark.parametrize("shape", ["nested", "flat", "dated"])
async def test_event_records_carry_type_id_time_and_their_sub_object(
    make_caller: CallerFactory, shape: str
) -> None:
    caller = await make_caller(event_shape=shape)
    body = (await caller.get(caller.org(EVENTS, "/events"), size="2000")).json
    envelope = {"generated", "count", "events"}
    # observed.md: the nested example's envelope has no status
    assert set(body) == (envelope if shape == "nested" else {*envelope, "status"})
    assert body["count"] == len(body["events"]) == 2000
    seen = set()
    for event in body["events"]:
        seen.add(kind(event))
        if shape == "nested":
            assert set(event) >= NESTED_KEYS
            assert "id" not in event
            assert "type" not in event
            when = event["when"]
            utc = datetime.strptime(when["createdAt"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            local = datetime.strptime(when["createdAtLocal"], "%Y-%m-%dT%H:%M:%SZ")
            # the local time carries a Z although it is not UTC
            offset = ZoneInfo(when["timezone"]).utcoffset(utc.replace(tzinfo=None))
            assert local == utc.replace(tzinfo=None) + offset
            assert set(event["where"]) == {"locationId", "locationName", "hotspotId"}
        elif shape == "dated":
            datetime.strptime(event["date"], "%Y-%m-%dT%H:%M:%SZ")
        else:
            assert not {"date", "when", "event"} & set(event)  # spec §2.4: no time at all
        subs = SUB_OBJECTS & set(event)
        expected = SUB_OBJECT.get(kind(event))
        assert subs == ({expected} if expected else set()), event
    assert seen == {*SUB_OBJECT, "login", "arriving"}  # observed.md: a type nobody documents
    contacts = {c["email"] for c in caller.sim.data.contacts}
    emails = [e["email"]["email"] for e in body["events"] if "email" in e]
    assert emails
    assert set(emails) <= contacts - {None}  # sent to contacts that have an address
    assert all(e["sms"]["phone"] for e in body["events"] if "sms" in e)
    visit = next(e for e in body["events"] if kind(e) == "visit")["visit"]
    assert set(visit) == {"startAt", "startAtLocal", "timezone", "duration"}


async def test_business_time_is_local_time_and_not_utc_order(
    caller: Caller, simulator: Simulator
) -> None:
    path = caller.org(EVENTS, "/events")
    default = (await caller.get(path, size="3000")).json["events"]
    utc = (await caller.get(path, size="3000", sortBy="utcTime")).json["events"]
    assert [ident(e) for e in utc] == simulator.data.event_ids()[:3000]
    assert [e["when"]["createdAtLocal"] for e in default] == sorted(
        e["when"]["createdAtLocal"] for e in default
    )
    created = [e["when"]["createdAt"] for e in default]
    assert created != sorted(created)  # the API's default order is not a UTC time cursor
    zones = {e["when"]["timezone"] for e in default}
    assert len(zones) >= 3


async def test_an_undocumented_type_is_served_unless_types_are_filtered(
    caller: Caller, simulator: Simulator
) -> None:
    path = caller.org(EVENTS, "/events")
    everything = (await caller.get(path, size="10000")).json["events"]
    assert "arriving" in {kind(e) for e in everything}
    documented = ",".join(SUB_OBJECT) + ",login"
    filtered = (await caller.get(path, size="10000", events=documented)).json["events"]
    assert "arriving" not in {kind(e) for e in filtered}
    assert 0 < len(everything) - len(filtered) < len(everything) // 20


async def test_type_filter_sort_and_reverse(caller: Caller, simulator: Simulator) -> None:
    path = caller.org(EVENTS, "/events")
    body = (await caller.get(path, events="visit,send_sms", size="10000", sortBy="utcTime")).json
    assert {kind(e) for e in body["events"]} == {"visit", "send_sms"}
    assert [ident(e) for e in body["events"]] == simulator.data.event_ids(
        types=["visit", "send_sms"]
    )
    newest = (await caller.get(path, sortReverse="true", sortBy="utcTime", size="5")).json
    assert [ident(e) for e in newest["events"]] == simulator.data.event_ids()[::-1][:5]


async def test_the_end_and_expired_or_unknown_ids_answer_no_results(
    make_caller: CallerFactory,
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(clock=clock, events=300)
    path = caller.org(EVENTS, "/events")
    events, ids = await scroll_events(caller, size="100")
    assert len(events) == 300
    again = (await caller.get(path, scrollId=ids[-1])).json
    assert again["count"] == 0
    fresh = (await caller.get(path, enableScroll="true", size="100")).json
    clock.step(60.5)
    late = await caller.get(path, scrollId=fresh["scrollId"])
    assert late.status == 200
    assert late.json["count"] == 0
    assert late.json["events"] == []
    assert caller.sim.counters.expired_scroll_hits == 1
    unknown = await caller.get(path, scrollId="true")  # spec: declared boolean; it is an id
    assert unknown.json["count"] == 0
    assert caller.sim.counters.unknown_scroll_hits == 1


async def test_size_cannot_change_during_a_scroll(caller: Caller) -> None:
    path = caller.org(EVENTS, "/events")
    first = (await caller.get(path, enableScroll="true", size="50")).json
    changed = await caller.get(path, scrollId=first["scrollId"], size="60")
    assert changed.status == 409
    assert "size" in changed.message
    same = await caller.get(path, scrollId=first["scrollId"], size="50")
    assert same.status == 200
    assert same.json["count"] == 50


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"size": "0"}, "size"),
        ({"size": "10001"}, "size"),
        ({"size": "many"}, "size"),
        ({"events": "visit,teleport"}, "teleport"),
        ({"sortBy": "random"}, "sortBy"),
        ({"dateStart": "yesterday"}, "dateStart"),
        ({"dateEnd": "2024-13-01T00:00:00Z"}, "dateEnd"),
        ({"dateStart": "2024-01-05T00:00:00Z", "dateEnd": "2024-01-04T00:00:00Z"}, "dateStart"),
        ({"sortReverse": "sometimes"}, "sortReverse"),
        ({"enableScroll": "yes please"}, "enableScroll"),
    ],
)
async def test_invalid_parameters_are_409(
    caller: Caller, params: dict[str, str], fragment: str
) -> None:
    answer = await caller.get(caller.org(EVENTS, "/events"), **params)
    assert answer.status == 409
    assert fragment in answer.message


async def test_size_bounds_are_inclusive(caller: Caller) -> None:
    path = caller.org(EVENTS, "/events")
    assert (await caller.get(path, size="1")).json["count"] == 1
    assert (await caller.get(path, size="10000")).json["count"] == 10_000


async def test_per_customer_events(caller: Caller, simulator: Simulator) -> None:
    cid = simulator.data.contacts[7]["cid"]
    path = caller.org(EVENTS, f"/customers/{cid}/events")
    body = (await caller.get(path, size="10000", events="login", sortBy="utcTime")).json
    assert [ident(e) for e in body["events"]] == simulator.data.event_ids(
        types=["login"], customer=cid
    )
    assert body["count"] > 0
    assert (await caller.get(path, enableScroll="true")).status == 409
    assert (await caller.get(caller.org(EVENTS, "/customers/nobody/events"))).status == 404
    mine = await caller.get(caller.org(EVENTS, f"/customers/{simulator.user_id}/events"))
    assert mine.json["count"] == 0


def test_data_is_deterministic_for_a_seed() -> None:
    a = Simulator(seed=5, events=2000, contacts=30)
    b = Simulator(seed=5, events=2000, contacts=30)
    c = Simulator(seed=6, events=2000, contacts=30)
    assert a.data.event_ids() == b.data.event_ids()
    assert a.data.contacts == b.data.contacts
    assert a.data.event_ids() != c.data.event_ids()
    assert len(set(a.data.event_ids())) == 2000
    record = a.data.events.record(0)
    assert ident(record) == a.data.event_ids()[0]


async def test_pages_in_every_order_match_the_log(caller: Caller, simulator: Simulator) -> None:
    # pages cut across the store's internal chunks, forwards, backwards and filtered
    everything = simulator.data.event_ids()
    newest_first, _ = await scroll_events(caller, size="1500", sortReverse="true", sortBy="utcTime")
    assert [ident(e) for e in newest_first] == everything[::-1]
    typed, _ = await scroll_events(
        caller, size="999", events="promo,signup", sortReverse="true", sortBy="utcTime"
    )
    assert [ident(e) for e in typed] == simulator.data.event_ids(types=["signup", "promo"])[::-1]
    store = simulator.data.events
    for i in (0, 2047, 2048, 4095, len(store) - 1):
        assert ident(store.record(i)) == everything[i]
