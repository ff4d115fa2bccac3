"""Spec §4.2 and §3 (scroll session): the contact list, one contact, and its sub-resources."""

from __future__ import annotations

from typing import Any

import pytest

from asyncwifi.testing import Simulator
from tests._virtualclock import VirtualClock
from tests.simulator.conftest import CallerFactory
from tests.simulator.simhelpers import BOUNDARY, Caller

LIST = "/v2/customers/organizations/"


async def scroll_all(caller: Caller, **params: str) -> tuple[list[dict[str, Any]], list[str], int]:
    """Every contact of a scroll, the sIds seen, and the totalCount announced."""
    first = await caller.get(caller.org(LIST), **params)
    assert first.status == 200
    body = first.json
    rows, sids, total = list(body["customers"]), [body["sId"]], body["totalCount"]
    while body["count"]:
        answer = await caller.get(caller.org(LIST), sId=sids[-1])
        assert answer.status == 200
        body = answer.json
        rows += body["customers"]
        sids.append(body["sId"])
    return rows, sids, total


async def test_scroll_returns_every_contact_once_with_a_new_sid_each_page(
    caller: Caller, simulator: Simulator
) -> None:
    rows, sids, total = await scroll_all(caller, size="40")
    assert total == len(simulator.data.contacts) == 250
    assert {r["cid"] for r in rows} == {c["cid"] for c in simulator.data.contacts}
    assert len(rows) == 250
    assert len(set(sids)) == len(sids) == 8  # 7 pages of up to 40, then the empty end
    created = [r["created"] for r in rows]
    assert created == sorted(created)  # sortBy created_absolute (the default)
    envelope = (await caller.get(caller.org(LIST), size="1")).json
    assert set(envelope) == {"generated", "totalCount", "count", "sId", "customers"}
    assert envelope["generated"].endswith("Z")
    assert simulator.counters.scrolls_started == 2


async def test_after_the_end_the_latest_sid_keeps_answering_no_results(caller: Caller) -> None:
    _, sids, _ = await scroll_all(caller, size="100")
    again = await caller.get(caller.org(LIST), sId=sids[-1])
    assert again.status == 200
    assert again.json["count"] == 0
    assert again.json["customers"] == []


async def test_filters_and_sort(caller: Caller, simulator: Simulator) -> None:
    contacts = simulator.data.contacts
    with_email, _, _ = await scroll_all(caller, size="500", hasEmail="true")
    assert {r["cid"] for r in with_email} == {c["cid"] for c in contacts if c["email"]}
    no_phone, _, _ = await scroll_all(caller, size="500", hasPhone="false")
    assert {r["cid"] for r in no_phone} == {c["cid"] for c in contacts if not c["phone"]}
    segment = simulator.data.segments[2]
    members, _, total = await scroll_all(caller, size="500", segmentId=segment["id"])
    assert total == segment["audience"] > 0
    assert all(segment["id"] in r["segmentCids"] for r in members)
    newest, _, _ = await scroll_all(caller, size="500", sortReverse="true")
    assert [r["created"] for r in newest] == sorted((c["created"] for c in contacts), reverse=True)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"sortBy": "name"}, "sortBy"),
        ({"size": "0"}, "size"),
        ({"size": "ten"}, "size"),
        ({"hasEmail": "maybe"}, "hasEmail"),
    ],
)
async def test_invalid_parameters_are_409(
    caller: Caller, params: dict[str, str], fragment: str
) -> None:
    answer = await caller.get(caller.org(LIST), **params)
    assert answer.status == 409
    assert fragment in answer.message


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"hasEmail": "1462"}, "hasEmail"),
        ({"hasPhone": "yes"}, "hasPhone"),
        ({"ageVerification": "2"}, "ageVerification"),
        ({"sortReverse": "maybe"}, "sortReverse"),
        ({"size": "0"}, "size"),
    ],
)
async def test_a_continuation_with_an_invalid_parameter_is_409_too(
    caller: Caller, params: dict[str, str], fragment: str
) -> None:
    """As on the events path: a continuation's filters are its scroll's, but a malformed
    one is refused, not ignored (issue 40: ``hasEmail=1462`` was a 200)."""
    first = await caller.get(caller.org(LIST), size="10", hasEmail="true")
    assert first.status == 200
    answer = await caller.get(caller.org(LIST), sId=first.json["sId"], **params)
    assert answer.status == 409
    assert fragment in answer.message
    ok = await caller.get(caller.org(LIST), sId=first.json["sId"], hasEmail="false")
    assert ok.status == 200  # a well-formed one is the scroll's business: still its filter
    assert all(row["email"] for row in ok.json["customers"])


async def test_unknown_segment_is_404_and_other_organizations_403(caller: Caller) -> None:
    assert (await caller.get(caller.org(LIST), segmentId="nope")).status == 404
    other = await caller.get(LIST + "org-someone-else")
    assert other.status == 403
    assert other.json == {"message": "Access Denied"}


async def test_an_sid_expires_60_clock_seconds_after_the_request_that_issued_it(
    make_caller: CallerFactory,
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(clock=clock)
    first = (await caller.get(caller.org(LIST), size="10")).json
    clock.step(60.0)  # exactly 60 s: still "within 60 seconds" (spec §3)
    second = (await caller.get(caller.org(LIST), sId=first["sId"])).json
    assert second["count"] == 10  # in time: the next batch
    clock.step(60.001)  # more than 60 s after the request that issued the latest sId
    late = await caller.get(caller.org(LIST), sId=second["sId"])
    assert late.status == 200  # spec §3: no error, just no results
    body = late.json
    assert body["count"] == 0
    assert body["customers"] == []
    assert body["totalCount"] == 250  # like the end of the scroll: only counting tells
    assert body["sId"] not in (first["sId"], second["sId"])
    assert caller.sim.counters.expired_scroll_hits == 1
    unknown = (await caller.get(caller.org(LIST), sId="made-up")).json
    assert unknown["count"] == 0
    assert caller.sim.counters.unknown_scroll_hits == 1


async def test_single_use_ids_lose_a_retried_page(make_caller: CallerFactory) -> None:
    caller = await make_caller(scroll_single_use=True)
    first = (await caller.get(caller.org(LIST), size="10")).json
    assert (await caller.get(caller.org(LIST), sId=first["sId"])).json["count"] == 10
    retried = (await caller.get(caller.org(LIST), sId=first["sId"])).json
    assert retried["count"] == 0


async def test_one_contact_and_its_sub_resources(caller: Caller, simulator: Simulator) -> None:
    contact = simulator.data.contacts[3]
    cid = contact["cid"]
    one = await caller.get(f"/v2/customers/{cid}")
    assert one.status == 200
    body = one.json
    assert body["customer"]["cid"] == cid
    assert body["customer"]["age"] == str(contact["age"])  # spec §2.1: a string here
    assert body["customer"]["email"] == contact["email"]
    events = (await caller.get(f"/v2/customers/{cid}/events", size="10000")).json
    assert [e["event"]["id"] for e in events["events"]] == list(
        reversed(simulator.data.event_ids(customer=cid))
    )
    devices = (await caller.get(f"/v2/customers/{cid}/devices")).json
    assert devices["count"] == len(devices["devices"]) >= 1
    assert all(":" in d["macAddress"] for d in devices["devices"])
    sessions = (await caller.get(f"/v2/customers/{cid}/accountings")).json
    assert sessions["count"] == len(sessions["accountings"])
    for path in ("", "/events", "/devices", "/accountings"):
        missing = await caller.get(f"/v2/customers/nobody{path}")
        assert missing.status == 404, path
        assert missing.message


async def test_policy_update_takes_effect(caller: Caller, simulator: Simulator) -> None:
    cid = simulator.data.contacts[0]["cid"]
    body = {"policies": [{"name": "mktgCommunications", "accepted": False, "version": "3"}]}
    answer = await caller.call("PUT", f"/v1/customers/{cid}/policies", json_body=body)
    assert answer.status == 200
    shown = (await caller.get(f"/v2/customers/{cid}")).json["customer"]
    [mktg] = [p for p in shown["policies"] if p["name"] == "mktgCommunications"]
    assert mktg["accepted"] is False
    assert mktg["version"] == "3"
    refused = {"policies": [{"name": "termsOfUse", "accepted": False}]}
    bad = await caller.call("PUT", f"/v1/customers/{cid}/policies", json_body=refused)
    assert bad.status == 409
    junks: list[Any] = [{"policies": []}, {"policies": [{"name": "privacy"}]}, [1, 2]]
    for junk in junks:
        answer = await caller.call("PUT", f"/v1/customers/{cid}/policies", json_body=junk)
        assert answer.status == 409, junk


async def test_delete_removes_the_contact(caller: Caller, simulator: Simulator) -> None:
    cid = simulator.data.contacts[5]["cid"]
    answer = await caller.call("DELETE", f"/v1/customers/{cid}")
    assert answer.status == 200
    assert answer.json["status"] == "OK"
    assert (await caller.get(f"/v2/customers/{cid}")).status == 404
    assert (await caller.call("DELETE", f"/v1/customers/{cid}")).status == 404
    rows, _, total = await scroll_all(caller, size="500")
    assert total == 249
    assert cid not in {r["cid"] for r in rows}
