"""Decode benchmark: asyncwifi's models against pydantic v2, orjson and json, in one run.

Decodes a 100-contact page and a 10,000-event page (realistic fixtures from
``tests/fixtures/models.py``: every field filled, unknown extra fields) with:

* asyncwifi ``decode_page`` (msgspec Structs), and with ``keep_raw=True``;
* pydantic v2 models of the same shape (``model_validate_json``);
* ``orjson.loads`` and ``json.loads`` to plain dicts (no validation, no types).

Prints the median of many timed runs for each, and its ratio to asyncwifi.
Run: ``python benchmarks/decode.py`` (about 20-40 s); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asyncwifi.models import decode_page
from asyncwifi.models._contacts import ContactPage
from asyncwifi.models._events import EventPage
from tests.fixtures.models import contact_page, dumps, event_page

# --- pydantic v2 models of the same shape (camelCase aliases, every field optional) -----


class P(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="ignore")


class PMetrics(P):
    frequency_monthly_visit: float | None = None
    compass_top_location: str | None = None
    compass_top_location_count: int | None = None
    top_frequency_buckets: str | None = None
    last_visit_venue: str | None = None
    pref_visit_w_day: int | None = None
    last_visit_date_utc: str | None = None
    avg_visit_length: float | None = None
    count_visited_locations: int | None = None
    pref_visit_timebucket: str | None = None
    pref_visit_time_hour: str | None = None
    last_visit_date_business: str | None = None
    count_total_visits: int | None = None
    conversion_rate: float | None = None
    avg_days_between_visits: float | None = None


class PPolicy(P):
    name: str | None = None
    accepted: bool | None = None
    date: str | None = None
    version: str | None = None


class PSegmentRef(P):
    cid: str | None = None
    name: str | None = None


class PExtId(P):
    id: str | None = None
    prop1: str | None = None
    prop2: str | None = None


class PKeyValue(P):
    key: str | None = None
    value: str | None = None


class PContact(P):
    cid: str | None = None
    title: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    gender: str | None = None
    birth_date: str | None = None
    birth_day: str | None = None
    age: int | str | None = None
    country: str | None = None
    zip_code: str | None = None
    created: str | None = None
    created_business: str | None = None
    modified: str | None = None
    email: str | None = None
    email_verified: bool | None = None
    email_valid: bool | None = None
    phone: str | None = None
    phone_number: str | None = None
    phone_prefix: str | None = None
    phone_verified: bool | None = None
    signup_method: str | None = None
    external_identity_id: str | None = None
    username: str | None = None
    locked: bool | None = None
    enabled: bool | None = None
    organization_cid: str | None = None
    location_cid: str | None = None
    location_name: str | None = None
    system: str | None = None
    type: str | None = None
    personal_id: str | None = None
    external_source: str | None = None
    last_login: str | None = None
    logins: int | None = None
    segment_cids: str | None = None
    segments: list[PSegmentRef] | None = None
    policies: list[PPolicy] | None = None
    ext_id: PExtId | None = None
    language: str | None = None
    splash_language: str | None = None
    generic_custom_field: list[PKeyValue] | None = None
    metrics: PMetrics | None = None


class PContactPage(P):
    generated: str | None = None
    total_count: int | None = None
    count: int | None = None
    s_id: str | None = None
    customers: list[PContact] | None = None


class PVisit(P):
    start_at: str | None = None
    start_at_local: str | None = None
    timezone: str | None = None
    duration: float | None = None


class PSignup(P):
    source: str | None = None


class PEmail(P):
    campaign_id: str | None = None
    communication_id: str | None = None
    channel: str | None = None
    campaign_name: str | None = None
    email: str | None = None


class PSms(P):
    campaign_id: str | None = None
    communication_id: str | None = None
    channel: str | None = None
    campaign_name: str | None = None
    phone: str | None = None
    prefix: str | None = None


class PSurvey(P):
    campaign_id: str | None = None
    campaign_name: str | None = None
    answer_id: str | None = None
    questions: dict[str, str] | None = None
    answers: dict[str, str] | None = None


class PPromo(P):
    type: str | None = None


class PEvent(P):
    type: str | None = None
    id: str | None = None
    visit: PVisit | None = None
    signup: PSignup | None = None
    email: PEmail | None = None
    sms: PSms | None = None
    survey: PSurvey | None = None
    promo: PPromo | None = None
    date: str | None = None


class PEventPage(P):
    status: str | None = None
    generated: str | None = None
    count: int | None = None
    events: list[PEvent] | None = None
    scroll_id: str | None = None


# --- timing ------------------------------------------------------------------------------


def medians(
    cases: list[tuple[str, Callable[[], Any]]], *, budget: float, inner: int
) -> list[tuple[str, float, int]]:
    """Median seconds per call of each case, timed in interleaved rounds.

    Each round runs every case once (``inner`` calls, averaged) in a rotated order, so a
    slow patch of the machine hits every case alike; rounds repeat for ``budget`` seconds
    (at least 15 rounds). The garbage collector stays on, as in real use.
    """
    for _, fn in cases:  # warm up (decoder caches, pydantic's validators)
        fn()
    samples: dict[str, list[float]] = {name: [] for name, _ in cases}
    deadline = time.perf_counter() + budget
    rounds = 0
    while rounds < 15 or time.perf_counter() < deadline:
        shift = rounds % len(cases)
        for name, fn in cases[shift:] + cases[:shift]:
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[name].append((time.perf_counter() - start) / inner)
        rounds += 1
    return [(name, statistics.median(samples[name]), rounds) for name, _ in cases]


def run(
    title: str, body: bytes, page_type: Any, pyd: type[BaseModel], budget: float, inner: int
) -> None:
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("asyncwifi", lambda: decode_page(body, page_type)),
        ("asyncwifi keep_raw", lambda: decode_page(body, page_type, keep_raw=True)),
        ("pydantic v2", lambda: pyd.model_validate_json(body)),
        ("orjson -> dicts", lambda: orjson.loads(body)),
        ("json -> dicts", lambda: json.loads(body)),
    ]
    gc.collect()
    results = medians(cases, budget=budget, inner=inner)
    base = results[0][1]
    print(f"\n{title} ({len(body):,} bytes, {results[0][2]} rounds x {inner} calls)")
    print(f"{'decoder':<20} {'median':>11} {'vs asyncwifi':>13}")
    for name, med, _ in results:
        print(f"{name:<20} {med * 1e3:>8.3f} ms {med / base:>12.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    args = parser.parse_args()
    budget = 0.5 if args.quick else 5.0

    contacts = dumps(contact_page(100))
    events = dumps(event_page(10_000))
    # same shapes, same answers: a sanity check before timing anything
    assert len(decode_page(contacts, ContactPage).items) == 100
    assert len(PContactPage.model_validate_json(contacts).customers or []) == 100
    assert len(decode_page(events, EventPage).items) == 10_000
    assert len(PEventPage.model_validate_json(events).events or []) == 10_000

    print(f"Python {sys.version.split()[0]}; medians; ratio > 1 means slower than asyncwifi")
    run("100-contact page", contacts, ContactPage, PContactPage, budget, inner=10)
    run("10,000-event page", events, EventPage, PEventPage, budget * 4, inner=1)


if __name__ == "__main__":
    main()
