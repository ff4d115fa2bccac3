"""A small fake of the events scroll for engine tests: real filtering rules, no HTTP.

:class:`FakeApi` stands for the client the backfill's feeds use (``events.list``, the
clock, the scheduler's "can a scroll start" check); each stream it opens is logged.

It follows spec §4.5 as the simulator does (dateStart and dateEnd inclusive, compared at
millisecond precision, sorted by date), counts one request per page plus the empty page
that ends a scroll, and can run out of quota, repeat records or lapse, on demand.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from asyncwifi._instant import format_instant
from asyncwifi.errors import QuotaExhaustedError, ScrollExpiredError
from tests._virtualclock import VirtualClock


@dataclass(frozen=True, slots=True)
class FakeEvent:
    id: str
    date: str
    type: str = "visit"

    @property
    def time_text(self) -> str:
        return self.date


@dataclass(slots=True)
class FakePage:
    items: list[FakeEvent]
    raw_items: list[bytes]
    errors: list[Any] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Query:
    """What one stream was asked: ``dateStart`` / ``dateEnd`` as sent (inclusive)."""

    date_start: str
    date_end: str


def make_events(n: int, start: datetime, span: timedelta, *, seed: int = 1) -> list[FakeEvent]:
    """``n`` events spread over ``[start, start + span)``, a few sharing an instant."""
    import random

    rnd = random.Random(seed)
    out = []
    for i in range(n):
        offset = timedelta(milliseconds=rnd.randrange(int(span.total_seconds() * 1000)))
        # every 17th shares its millisecond with another event
        date = out[-1].date if i % 17 == 0 and out else format_instant(start + offset)
        out.append(FakeEvent(id=f"ev-{i:06d}", date=date, type=rnd.choice(["visit", "login"])))
    return out


def raw_of(event: FakeEvent) -> bytes:
    # a field the SDK does not know, and an odd spacing: both must survive byte for byte
    return json.dumps(
        {"id": event.id, "type": event.type, "date": event.date, "x-extra": {"k": [1, 2]}},
        separators=(", ", ":"),
    ).encode()


#: 2026-01-01T00:00:00Z: where a fake server's stepping clock starts
JAN_2026 = 1_767_225_600.0


@dataclass
class FakeServer:
    """The events endpoint; ``quota`` requests per day (None: unlimited)."""

    events: list[FakeEvent]
    page_size: int = 50
    quota: int | None = None
    clock: VirtualClock = field(default_factory=lambda: VirtualClock.stepping(JAN_2026))
    #: dateEnd rounded up to the next whole second (a sloppy server; boundary test)
    round_end_up: bool = False
    #: raise ScrollExpiredError after this many pages of a stream (once per stream count)
    expire_after_pages: int | None = None
    #: end a stream silently (an empty page, like a lapsed scroll the client took for the
    #: end) after this many pages
    lapse_silently_after: int | None = None
    requests: int = 0
    day_used: int = 0
    day: int = 0
    opened: list[Query] = field(default_factory=list)
    on_page: Callable[[], None] | None = None

    def _spend(self) -> None:
        day = int(self.clock.now() // 86_400)
        if day != self.day:
            self.day, self.day_used = day, 0
        if self.quota is not None and self.day_used >= self.quota:
            raise QuotaExhaustedError("day quota spent", reset_at=(day + 1) * 86_400.0)
        self.day_used += 1
        self.requests += 1

    def select(self, date_start: str, date_end: str) -> list[FakeEvent]:
        end = date_end
        if self.round_end_up:
            moment = datetime.fromisoformat(date_end).astimezone(UTC)
            end = format_instant(moment.replace(microsecond=0) + timedelta(seconds=1))
        chosen = [e for e in self.events if date_start <= e.date <= end]
        return sorted(chosen, key=lambda e: (e.date, e.id))

    def open(self, request: Query) -> FakeStream:
        self.opened.append(request)
        return FakeStream(self, request)


class FakeEvents:
    """``api.events`` of :class:`FakeApi`."""

    scroll_window = 60.0

    def __init__(self, server: FakeServer) -> None:
        self.server = server

    def list(self, *, date_start: datetime, date_end: datetime, **_: Any) -> FakeStream:
        query = Query(format_instant(date_start), format_instant(date_end))
        return self.server.open(query)

    #: the key stream (``events.keys``) is served the same bytes
    keys = list


class FakeScheduler:
    def earliest_admission(self, *_: Any, **__: Any) -> float:
        return -math.inf  # always room


class FakeApi:
    """The client as the backfill uses it, over a :class:`FakeServer`."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.clock = server.clock
        self.events = FakeEvents(server)
        self.organization: str | None = None  # as a Client without a default organization
        self.scheduler = FakeScheduler()


class FakeStream:
    def __init__(self, server: FakeServer, request: Query) -> None:
        self.server = server
        self.request = request
        self.requests = 0
        self.closed = False

    async def pages(self) -> AsyncIterator[FakePage]:
        import asyncio

        server = self.server
        chosen = server.select(self.request.date_start, self.request.date_end)
        size = server.page_size
        for n, i in enumerate(range(0, len(chosen), size)):
            if server.expire_after_pages is not None and n == server.expire_after_pages:
                raise ScrollExpiredError("lapsed", delivered=i, total=len(chosen))
            if server.lapse_silently_after is not None and n == server.lapse_silently_after:
                break
            server._spend()
            self.requests += 1
            await asyncio.sleep(0)
            chunk = chosen[i : i + size]
            if server.on_page is not None:
                server.on_page()
            yield FakePage(items=list(chunk), raw_items=[raw_of(e) for e in chunk])
        server._spend()  # the empty page that ends the scroll
        self.requests += 1

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self) -> FakeStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
