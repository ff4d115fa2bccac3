"""Events (spec §4.5): the organization's log with its scroll, and one contact's events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import msgspec
from aiohttp import web

from asyncwifi.testing._api import DEFAULT_PAGE, JSON, PAGE_MAX, ApiBase, ApiFault, touch
from asyncwifi.testing._events import EVENT_TYPES, EventStore
from asyncwifi.testing._scroll import ScrollSession
from asyncwifi.testing._util import BadParameter, iso_ms, parse_bool, parse_instant, parse_int

__all__ = ["EVENT_SORTS", "EventsApi", "patch_event"]

EVENT_SORTS = ("businessTime", "utcTime")


def patch_event(events: EventStore, i: int, **fields: Any) -> None:
    """Serve event ``i`` with top-level ``fields`` set, or removed when ``None`` (tests: a
    record that does not decode, ``visit="broken"``; one with no id, ``id=None``, or
    ``event={"type": "visit"}`` in the nested shape). Its time and place stay."""
    record = {**events.record(i), **fields}
    events.bodies.patch(i, msgspec.json.encode({k: v for k, v in record.items() if v is not None}))


class _EventQuery(NamedTuple):
    start: float | None
    end: float | None
    types: list[str] | None
    reverse: bool
    size: int
    business: bool


class EventsApi(ApiBase):
    """Event endpoints (and a contact's events under /v2/customers)."""

    # -- events (spec §4.5) ---------------------------------------------------------------

    def _event_query(self, q: Mapping[str, str], *, default_reverse: bool = False) -> _EventQuery:
        size = parse_int(q.get("size"), "size", DEFAULT_PAGE, 1, PAGE_MAX)
        sort = q.get("sortBy", "businessTime")
        if sort not in EVENT_SORTS:
            raise BadParameter(f"sortBy must be businessTime or utcTime, got {sort!r}")
        reverse = parse_bool(q.get("sortReverse"), "sortReverse", default_reverse)
        start = parse_instant(q["dateStart"], "dateStart") if "dateStart" in q else None
        end = parse_instant(q["dateEnd"], "dateEnd") if "dateEnd" in q else None
        if start is not None and end is not None and start > end:
            raise BadParameter("dateStart must not be after dateEnd")
        types = None
        if q.get("events"):
            types = [t.strip() for t in q["events"].split(",") if t.strip()]
            unknown = [t for t in types if t not in EVENT_TYPES]
            if unknown:
                raise BadParameter(
                    f"unknown event type {unknown[0]!r}; allowed: {', '.join(EVENT_TYPES)}"
                )
        return _EventQuery(start, end, types, reverse, size, sort == "businessTime")

    def _select(self, query: _EventQuery, owner: int | None) -> Sequence[int]:
        store = self.data.events
        sel = store.select(query.start, query.end, query.types, owner)
        if query.business:
            # observed.md: business time is the venue's local time, not in UTC order
            return store.business_order(sel, reverse=query.reverse)
        return sel[::-1] if query.reverse else sel

    def _events_page(
        self, request: web.Request, page: Sequence[int], scroll_id: str | None
    ) -> web.Response:
        n = len(page)
        # observed.md: the vendor's nested example has no ``status`` in its envelope
        status = b"" if self.data.events.shape == "nested" else b'"status":"OK",'
        head = b'{%s"generated":"%s","count":%d' % (status, iso_ms(self._now()).encode(), n)
        if scroll_id is not None:
            head += b',"scrollId":"' + scroll_id.encode() + b'"'
        body = b"".join((head, b',"events":[', self.data.events.join(page), b"]}"))
        touch(request, "events", n)
        self.sim.counters.events_served += n
        return web.Response(body=body, content_type=JSON, charset="utf-8")

    async def events_list(self, request: web.Request) -> web.Response:
        """GET /v1/organizations/{cid}/events: events, with or without a scroll.

        ``enableScroll=true`` opens a scroll (first page + ``scrollId``); ``scrollId``
        continues one: the other filters then come from the scroll, and a ``size`` other
        than the scroll's is a 409 (spec §4.5: it cannot change during a scroll).
        """
        self._org(request)
        q = request.query
        sim = self.sim
        now = self._now()
        sid = q.get("scrollId")
        if sid is not None:
            # the other parameters are checked as on a first request (a bad sortBy is a
            # 409 either way); the scroll's own filters then apply
            self._event_query(q)
            look = sim.scrolls.lookup(sid, now)
            if look.status != "ok" or look.session is None or look.session.kind != "events":
                self._count_lost(look.status)
                return self._events_page(request, range(0), sim.scrolls.finished(now))
            session, pos = look.session, look.position
            if "size" in q:
                size = parse_int(q.get("size"), "size", session.size, 1, PAGE_MAX)
                if size != session.size:
                    raise ApiFault(409, "size cannot change during a scroll")
            sim.counters.scroll_pages += 1
            page = session.items[pos : pos + session.size]
            new_sid = sim.scrolls.issue(session, pos + len(page), now)
            return self._events_page(request, page, new_sid)
        query = self._event_query(q)
        sel = self._select(query, None)
        size = query.size
        if parse_bool(q.get("enableScroll"), "enableScroll"):
            session = ScrollSession("events", sel, size)
            sim.counters.scrolls_started += 1
            page = sel[:size]
            return self._events_page(request, page, sim.scrolls.issue(session, len(page), now))
        return self._events_page(request, sel[:size], None)

    def _owner_events(
        self, request: web.Request, owner: int | None, *, default_reverse: bool = False
    ) -> web.Response:
        q = request.query
        if parse_bool(q.get("enableScroll"), "enableScroll") or "scrollId" in q:
            raise BadParameter("scrolling is only available on the organization events path")
        query = self._event_query(q, default_reverse=default_reverse)
        if owner is None:
            return self._events_page(request, range(0), None)
        return self._events_page(request, self._select(query, owner)[: query.size], None)

    async def customer_events(self, request: web.Request) -> web.Response:
        """GET /v1/organizations/{cid}/customers/{id}/events: one contact's events.

        ``{id}`` is a contact cid; the service user's id from the JWT (spec §4.5) gives an
        empty list (a service user has no events); anything else is a 404.
        """
        self._org(request)
        who = request.match_info["id"]
        if who == self.sim.auth.user_id:
            return self._owner_events(request, None)
        return self._owner_events(request, int(self._contact(who)["_index"]))

    async def contact_events(self, request: web.Request) -> web.Response:
        """GET /v2/customers/{cid}/events: the contact's events (no scroll).

        Same query parameters and envelope as the events API; newest first by default
        (``sortReverse=false`` gives oldest first).
        """
        c = self._contact(request.match_info["cid"])
        return self._owner_events(request, int(c["_index"]), default_reverse=True)
