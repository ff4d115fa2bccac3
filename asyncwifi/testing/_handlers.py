"""The API behind the gateway: one handler per endpoint of spec §4.

Handlers only read the request, change the simulated state and build the response; the
gateway middleware (``_server``) does rate limits, authentication and faults. A handler
reports how many objects it touched (for per-object limits) in ``request[OBJECTS]``.
Choices where the spec says "not shown" are documented on each handler.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from aiohttp import web

from asyncwifi.testing._data import public
from asyncwifi.testing._events import EVENT_TYPES, Selection
from asyncwifi.testing._scroll import ScrollSession
from asyncwifi.testing._util import (
    BadParameter,
    hex_id,
    iso_ms,
    iso_z,
    mix,
    parse_bool,
    parse_instant,
    parse_int,
)
from asyncwifi.testing._validation import check_create, check_update, normalize_mac

if TYPE_CHECKING:
    from asyncwifi.testing._server import Simulator

__all__ = ["OBJECTS", "Api", "ApiFault", "json_response"]

#: request key under which a handler records the objects it touched: ``{"hotspots": 3}``
OBJECTS = web.RequestKey("asyncwifi.objects", dict[str, int])
#: request key of the validated token's jti (set by the gateway)
TOKEN = web.RequestKey("asyncwifi.token", str)

EVENTS_SIZE_MAX = 10_000  # spec §4.5 / §8: 1 to 10000
DEFAULT_PAGE = 100  # spec §4.2: "100 seen"; the default of every list here
CONTACT_SORTS = ("created_absolute", "created", "modified", "lastLogin")
EVENT_SORTS = ("businessTime", "utcTime")
_ENCODE = msgspec.json.Encoder().encode
JSON = "application/json"

Handler = Callable[[web.Request], Coroutine[Any, Any, web.StreamResponse]]


class _EventQuery(NamedTuple):
    start: float | None
    end: float | None
    types: list[str] | None
    reverse: bool
    size: int


class ApiFault(Exception):
    """An error answer: ``status`` with the JSON body ``{"message": message}`` (spec §7)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_response(obj: Any, status: int = 200) -> web.Response:
    """A JSON response encoded with msgspec."""
    return web.Response(body=_ENCODE(obj), status=status, content_type=JSON, charset="utf-8")


def _touch(request: web.Request, name: str, count: int) -> None:
    objects = request.get(OBJECTS)
    if objects is None:
        objects = request[OBJECTS] = {}
    objects[name] = objects.get(name, 0) + count


async def _json_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        raise BadParameter("a JSON body is required")
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise BadParameter("the body is not valid JSON") from None


class Api:
    """The endpoints of spec §4, bound to one simulator's state."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.data = sim.data
        self._hotspot_serial = 0

    def routes(self) -> list[tuple[str, str, Handler]]:
        """(method, path, handler) for every endpoint, in matching order."""
        return [
            ("POST", "/v1/sts/login/services", self.login),
            ("POST", "/v1/sts/logout", self.logout),
            ("GET", "/v2/customers/organizations/{cid}", self.contacts_list),
            ("GET", "/v2/customers/{cid}", self.contact_get),
            ("GET", "/v2/customers/{cid}/events", self.contact_events),
            ("GET", "/v2/customers/{cid}/devices", self.contact_devices),
            ("GET", "/v2/customers/{cid}/accountings", self.contact_accountings),
            ("PUT", "/v1/customers/{cid}/policies", self.contact_policies),
            ("DELETE", "/v1/customers/{cid}", self.contact_delete),
            ("GET", "/v3/hotspots/organizations/{cid}", self.hotspots_list),
            ("GET", "/v3/hotspots/identifier/{hotspotIdentifier}", self.hotspot_by_identifier),
            ("GET", "/v3/hotspots/{hotspotId}", self.hotspot_get),
            ("POST", "/v3/hotspots", self.hotspot_create),
            ("PUT", "/v3/hotspots/{hotspotId}", self.hotspot_update),
            ("DELETE", "/v3/hotspots/{hotspotId}", self.hotspot_delete),
            ("GET", "/v2/segments/organizations/{cid}", self.segments_list),
            ("GET", "/v1/organizations/{cid}/events", self.events_list),
            ("GET", "/v1/organizations/{cid}/customers/{id}/events", self.customer_events),
        ]

    # -- helpers --------------------------------------------------------------------------

    def _now(self) -> float:
        return self.sim.clock.now()

    def _org(self, request: web.Request) -> None:
        """An organization path for another tenant: 403 (spec §7: not authorised)."""
        if request.match_info["cid"] != self.sim.organization:
            raise ApiFault(403, "Access Denied")

    def _contact(self, cid: str) -> dict[str, Any]:
        contact = self.data.contact(cid)
        if contact is None:
            raise ApiFault(404, "Customer not found")
        return contact

    # -- authentication (spec §4.1, §5) ----------------------------------------------------

    async def login(self, request: web.Request) -> web.Response:
        """POST /v1/sts/login/services: ``{clientKey, clientSecret}`` -> ``{token}`` or 401.

        A body that is not JSON is a 409; missing or wrong credentials are a 401.
        """
        body = await _json_body(request)
        sim = self.sim
        ok = (
            isinstance(body, dict)
            and body.get("clientKey") == sim.client_key
            and body.get("clientSecret") == sim.client_secret
        )
        if not ok:
            sim.counters.login_failures += 1
            raise ApiFault(401, "Unauthorized")
        token = sim.auth.issue(self._now())
        sim.counters.logins += 1
        sim.counters.tokens_issued += 1
        return json_response({"token": token})

    async def logout(self, request: web.Request) -> web.Response:
        """POST /v1/sts/logout: revokes the presented token; answers ``{"status": "OK"}``."""
        self.sim.auth.revoke(request[TOKEN])
        self.sim.counters.tokens_revoked += 1
        return json_response({"status": "OK"})

    # -- contacts (spec §4.2) -------------------------------------------------------------

    async def contacts_list(self, request: web.Request) -> web.Response:
        """GET /v2/customers/organizations/{cid}: a scroll over contacts.

        Filters: ``hasEmail``, ``hasPhone``, ``ageVerification`` (booleans) and ``segmentId``
        (a segment id; unknown: 404). ``sortBy``: created_absolute (default), created,
        modified, lastLogin; ``sortReverse``; ``size`` 1..10000 (default 100). The first
        request opens a point-in-time snapshot; ``sId`` continues it (filters and size then
        come from the snapshot). Contacts deleted meanwhile are skipped.
        """
        self._org(request)
        q = request.query
        now = self._now()
        sim = self.sim
        sid = q.get("sId")
        if sid is not None:
            look = sim.scrolls.lookup(sid, now)
            if look.status != "ok" or look.session is None or look.session.kind != "contacts":
                self._count_lost(look.status)
                total = look.session.total if look.session is not None else 0
                return self._contacts_page([], total, sim.scrolls.finished(now), now)
            session, pos = look.session, look.position
            sim.counters.scroll_pages += 1
        else:
            size = parse_int(q.get("size"), "size", DEFAULT_PAGE, 1, EVENTS_SIZE_MAX)
            sort = q.get("sortBy", "created_absolute")
            if sort not in CONTACT_SORTS:
                raise BadParameter(f"sortBy must be one of {', '.join(CONTACT_SORTS)}")
            reverse = parse_bool(q.get("sortReverse"), "sortReverse")
            has_email = q.get("hasEmail")
            has_phone = q.get("hasPhone")
            age = q.get("ageVerification")
            segment = q.get("segmentId")
            rows = list(self.data.live_contacts())
            if has_email is not None:
                want = parse_bool(has_email, "hasEmail")
                rows = [c for c in rows if bool(c["email"]) == want]
            if has_phone is not None:
                want = parse_bool(has_phone, "hasPhone")
                rows = [c for c in rows if bool(c["phone"]) == want]
            if age is not None:
                want = parse_bool(age, "ageVerification")
                rows = [c for c in rows if c["ageVerification"] is want]
            if segment is not None:
                if not any(s["id"] == segment for s in self.data.segments):
                    raise ApiFault(404, "Segment not found")
                rows = [c for c in rows if any(s["cid"] == segment for s in c["segments"])]
            key = {"created_absolute": "_created", "created": "_created"}.get(sort, "_" + sort)
            rows.sort(key=lambda c: (c[key], c["_index"]), reverse=reverse)
            session = ScrollSession("contacts", [c["cid"] for c in rows], size)
            pos = 0
            sim.counters.scrolls_started += 1
        cids = session.items[pos : pos + session.size]
        page = [c for c in map(self.data.contact, cids) if c is not None]
        new_sid = sim.scrolls.issue(session, pos + len(cids), now)
        _touch(request, "contacts", len(page))
        sim.counters.contacts_served += len(page)
        return self._contacts_page(page, session.total, new_sid, now)

    def _count_lost(self, status: str) -> None:
        if status == "expired":
            self.sim.counters.expired_scroll_hits += 1
        else:
            self.sim.counters.unknown_scroll_hits += 1

    @staticmethod
    def _contacts_page(
        page: list[dict[str, Any]], total: int, sid: str, now: float
    ) -> web.Response:
        return json_response(
            {
                "generated": iso_ms(now),
                "totalCount": total,
                "count": len(page),
                "sId": sid,
                "customers": [public(c) for c in page],
            }
        )

    async def contact_get(self, request: web.Request) -> web.Response:
        """GET /v2/customers/{cid}: ``{status, generated, customer}``; 404 if unknown.

        The single-contact shape has ``age`` as a string (spec §2.1: "a string in the
        generic shape"); the list has it as a number.
        """
        c = self._contact(request.match_info["cid"])
        shown = public(c)
        shown["age"] = str(shown["age"])
        _touch(request, "contacts", 1)
        return json_response({"status": "OK", "generated": iso_ms(self._now()), "customer": shown})

    async def contact_events(self, request: web.Request) -> web.Response:
        """GET /v2/customers/{cid}/events: the contact's events (no scroll).

        Same query parameters and envelope as the events API; newest first by default
        (``sortReverse=false`` gives oldest first).
        """
        c = self._contact(request.match_info["cid"])
        return self._owner_events(request, int(c["_index"]), default_reverse=True)

    async def contact_devices(self, request: web.Request) -> web.Response:
        """GET /v2/customers/{cid}/devices: ``{status, generated, count, devices}``."""
        c = self._contact(request.match_info["cid"])
        rnd = random.Random(mix(self.sim.seed, 0xDE, c["_index"]))
        devices = []
        for _ in range(1 + rnd.randrange(3)):
            first = c["_created"] + rnd.randrange(86_400 * 30)
            devices.append(
                {
                    "macAddress": ":".join(f"{rnd.randrange(256):02x}" for _ in range(6)),
                    "manufacturer": rnd.choice(("Apple", "Samsung", "Google", "Xiaomi")),
                    "os": rnd.choice(("iOS", "Android")),
                    "firstSeen": iso_z(first),
                    "lastSeen": c["lastLogin"],
                }
            )
        return json_response(
            {
                "status": "OK",
                "generated": iso_ms(self._now()),
                "count": len(devices),
                "devices": devices,
            }
        )

    async def contact_accountings(self, request: web.Request) -> web.Response:
        """GET /v2/customers/{cid}/accountings: Wi-Fi sessions, ``{..., accountings}``."""
        c = self._contact(request.match_info["cid"])
        rnd = random.Random(mix(self.sim.seed, 0xACC, c["_index"]))
        hotspots = list(self.data.hotspots)
        rows = []
        start = c["_lastLogin"]
        for k in range(rnd.randrange(0, 8)):
            duration = rnd.randrange(60, 10_800)
            rows.append(
                {
                    "id": hex_id(self.sim.seed, 0xACC, c["_index"], k),
                    "hotspotId": rnd.choice(hotspots) if hotspots else None,
                    "startTime": iso_z(start),
                    "stopTime": iso_z(start + duration),
                    "duration": duration,
                    "inputOctets": rnd.randrange(10**5, 10**9),
                    "outputOctets": rnd.randrange(10**5, 10**8),
                    "terminateCause": rnd.choice(
                        ("User-Request", "Idle-Timeout", "Session-Timeout")
                    ),
                }
            )
            start -= rnd.randrange(86_400, 86_400 * 10)
        return json_response(
            {
                "status": "OK",
                "generated": iso_ms(self._now()),
                "count": len(rows),
                "accountings": rows,
            }
        )

    async def contact_policies(self, request: web.Request) -> web.Response:
        """PUT /v1/customers/{cid}/policies: set consents; answers the contact's policies.

        Body: ``{"policies": [{"name", "accepted", "version"?}]}`` (a bare list is accepted
        too). termsOfUse and privacy cannot be refused (409), as in spec §6.2.
        """
        c = self._contact(request.match_info["cid"])
        body = await _json_body(request)
        items = body.get("policies") if isinstance(body, dict) else body
        if not isinstance(items, list) or not items:
            raise BadParameter("policies must be a non-empty list")
        now = self._now()
        for item in items:
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("name"), str)
                or not item["name"]
            ):
                raise BadParameter("each policy needs a name")
            if not isinstance(item.get("accepted"), bool):
                raise BadParameter("each policy needs accepted (a boolean)")
            if item["name"] in ("termsOfUse", "privacy") and not item["accepted"]:
                raise BadParameter(f"{item['name']} cannot be refused")
            if "version" in item and not isinstance(item["version"], str):
                raise BadParameter("version must be a string")
        for item in items:
            entry = {
                "name": item["name"],
                "accepted": item["accepted"],
                "date": iso_z(now),
                "version": item.get("version", "default"),
            }
            for k, old in enumerate(c["policies"]):
                if old["name"] == item["name"]:
                    c["policies"][k] = entry
                    break
            else:
                c["policies"].append(entry)
            if item["name"] == "mktgCommunications":
                c["_mktg"] = item["accepted"]
        c["modified"], c["_modified"] = iso_z(now), now
        _touch(request, "contacts", 1)
        return json_response({"status": "OK", "generated": iso_ms(now), "policies": c["policies"]})

    async def contact_delete(self, request: web.Request) -> web.Response:
        """DELETE /v1/customers/{cid}: ``{status, generated}``; the contact is gone (404 after)."""
        cid = request.match_info["cid"]
        self._contact(cid)
        self.data.delete_contact(cid)
        _touch(request, "contacts", 1)
        return json_response({"status": "OK", "generated": iso_ms(self._now())})

    # -- hotspots (spec §4.3) -------------------------------------------------------------

    async def hotspots_list(self, request: web.Request) -> web.Response:
        """GET /v3/hotspots/organizations/{cid}: filters ``dateGt``, ``dateLt`` (YYYY-MM-DD,
        on the creation ``date``), ``name`` (case-insensitive substring), ``macAddress``,
        ``hotspotIdentifier``, ``venueId`` (exact) and ``deleted`` (default false).
        """
        self._org(request)
        q = request.query
        rows = list(self.data.hotspots.values())
        deleted = parse_bool(q.get("deleted"), "deleted", False)
        rows = [h for h in rows if h["deleted"] is deleted]
        for param, op in (("dateGt", ">"), ("dateLt", "<")):
            value = q.get(param)
            if value is None:
                continue
            if len(value) != 10 or value[4] != "-" or value[7] != "-":
                raise BadParameter(f"{param} must be a date YYYY-MM-DD")
            parse_instant(value, param)
            rows = [
                h for h in rows if (h["date"][:10] > value if op == ">" else h["date"][:10] < value)
            ]
        if "name" in q:
            needle = q["name"].lower()
            rows = [h for h in rows if needle in h["name"].lower()]
        if "macAddress" in q:
            mac = normalize_mac(q["macAddress"])
            rows = [h for h in rows if h.get("macAddress") == mac]
        for param in ("hotspotIdentifier", "venueId"):
            if param in q:
                rows = [h for h in rows if h.get(param) == q[param]]
        _touch(request, "hotspots", len(rows))
        return json_response(
            {"status": "OK", "generated": iso_ms(self._now()), "count": len(rows), "hotspots": rows}
        )

    def _hotspot(self, hid: str, *, live: bool = False) -> dict[str, Any]:
        h = self.data.hotspots.get(hid)
        if h is None or (live and h["deleted"]):
            raise ApiFault(404, "Hotspot not found")
        return h

    async def hotspot_get(self, request: web.Request) -> web.Response:
        """GET /v3/hotspots/{hotspotId}: ``{status, generated, hotspot}`` (a deleted one
        too, with ``deleted: true``); 404 if unknown."""
        h = self._hotspot(request.match_info["hotspotId"])
        _touch(request, "hotspots", 1)
        return json_response({"status": "OK", "generated": iso_ms(self._now()), "hotspot": h})

    async def hotspot_by_identifier(self, request: web.Request) -> web.Response:
        """GET /v3/hotspots/identifier/{hotspotIdentifier}: a live hotspot first, else a
        deleted one; 404 if none."""
        ident = request.match_info["hotspotIdentifier"]
        found = sorted(
            (h for h in self.data.hotspots.values() if h.get("hotspotIdentifier") == ident),
            key=lambda h: bool(h["deleted"]),
        )
        if not found:
            raise ApiFault(404, "Hotspot not found")
        _touch(request, "hotspots", 1)
        return json_response(
            {"status": "OK", "generated": iso_ms(self._now()), "hotspot": found[0]}
        )

    def _location(self, venue: str | None) -> dict[str, Any] | None:
        return next((loc for loc in self.data.locations if loc["id"] == venue), None)

    def _unique(self, field: str, value: Any, skip: str | None = None) -> None:
        for h in self.data.hotspots.values():
            if h["id"] != skip and not h["deleted"] and value and h.get(field) == value:
                raise BadParameter(f"a hotspot with this {field} already exists")

    async def hotspot_create(self, request: web.Request) -> web.Response:
        """POST /v3/hotspots: validated by ``_validation.check_create``; answers 201 with
        ``{generated, status, locationId, hotspotId}``. ``organizationId``, when sent, must
        be the caller's; macAddress and hotspotIdentifier are unique among live hotspots."""
        raw = await _json_body(request)
        venue = raw.get("venueId") if isinstance(raw, dict) else None
        location = self._location(venue if isinstance(venue, str) else None)
        body = check_create(raw, venue_known=location is not None)
        if body.get("organizationId") not in (None, self.sim.organization):
            raise BadParameter("organizationId does not match the caller's organization")
        self._unique("macAddress", body.get("macAddress"))
        self._unique("hotspotIdentifier", body.get("hotspotIdentifier"))
        now = self._now()
        self._hotspot_serial += 1
        hid = hex_id(self.sim.seed, 0x4057, 1 << 32, self._hotspot_serial)
        address = location if body.get("addressAsLocation") and location else body
        hotspot = {
            "id": hid,
            "name": body["name"],
            "description": body.get("description") or "",
            "firmware": "",
            "vendor": body["routerType"],
            "hotspotIdentifier": body.get("hotspotIdentifier") or "",
            "date": iso_z(now),
            "macAddress": body.get("macAddress") or "",
            "venueId": body["venueId"],
            "country": address.get("country"),
            "city": address.get("city"),
            "address": address.get("address"),
            "state": address.get("state"),
            "zip": address.get("zip"),
            "latitude": body.get("latitude", address.get("latitude")),
            "longitude": body.get("longitude", address.get("longitude")),
            "routerType": body["routerType"],
            "ssid": body.get("ssid") or "",
            "enabled": True,
            "deleted": False,
        }
        self.data.hotspots[hid] = hotspot
        _touch(request, "hotspots", 1)
        return json_response(
            {
                "generated": iso_ms(now),
                "status": "OK",
                "locationId": body["venueId"],
                "hotspotId": hid,
            },
            status=201,
        )

    async def hotspot_update(self, request: web.Request) -> web.Response:
        """PUT /v3/hotspots/{hotspotId}: a partial update (``_validation.check_update``);
        answers ``{generated, status, locationId, hotspotId}``; 404 if unknown or deleted."""
        h = self._hotspot(request.match_info["hotspotId"], live=True)
        body = check_update(await _json_body(request))
        if body.get("addressAsLocation"):
            location = self._location(h["venueId"])
            if location is None:
                raise BadParameter("addressAsLocation needs a known venue")
            for key in ("country", "city", "address", "state", "zip", "latitude", "longitude"):
                h[key] = location[key]
        for key in (
            "name", "description", "country", "address", "city", "state", "zip",
            "latitude", "longitude", "enabled",
        ):  # fmt: skip
            if key in body:
                h[key] = body[key]
        _touch(request, "hotspots", 1)
        return json_response(
            {
                "generated": iso_ms(self._now()),
                "status": "OK",
                "locationId": h["venueId"],
                "hotspotId": h["id"],
            }
        )

    async def hotspot_delete(self, request: web.Request) -> web.Response:
        """DELETE /v3/hotspots/{hotspotId}: a soft delete (``deleted: true``); ``{generated,
        status}``; deleting a deleted or unknown hotspot is a 404."""
        h = self._hotspot(request.match_info["hotspotId"], live=True)
        h["deleted"] = True
        _touch(request, "hotspots", 1)
        return json_response({"generated": iso_ms(self._now()), "status": "OK"})

    # -- segments (spec §4.4) -------------------------------------------------------------

    async def segments_list(self, request: web.Request) -> web.Response:
        """GET /v2/segments/organizations/{cid}: ``{generated, size, segments}``."""
        self._org(request)
        rows = self.data.segments
        _touch(request, "segments", len(rows))
        return json_response(
            {"generated": iso_ms(self._now()), "size": len(rows), "segments": rows}
        )

    # -- events (spec §4.5) ---------------------------------------------------------------

    def _event_query(self, q: Mapping[str, str], *, default_reverse: bool = False) -> _EventQuery:
        size = parse_int(q.get("size"), "size", DEFAULT_PAGE, 1, EVENTS_SIZE_MAX)
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
        return _EventQuery(start, end, types, reverse, size)

    def _select(self, query: _EventQuery, owner: int | None) -> Selection:
        sel = self.data.events.select(query.start, query.end, query.types, owner)
        return sel[::-1] if query.reverse else sel

    def _events_page(
        self, request: web.Request, page: Sequence[int], scroll_id: str | None
    ) -> web.Response:
        n = len(page)
        head = b'{"status":"OK","generated":"%s","count":%d' % (
            iso_ms(self._now()).encode(),
            n,
        )
        if scroll_id is not None:
            head += b',"scrollId":"' + scroll_id.encode() + b'"'
        body = b"".join((head, b',"events":[', self.data.events.join(page), b"]}"))
        _touch(request, "events", n)
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
            look = sim.scrolls.lookup(sid, now)
            if look.status != "ok" or look.session is None or look.session.kind != "events":
                self._count_lost(look.status)
                return self._events_page(request, range(0), sim.scrolls.finished(now))
            session, pos = look.session, look.position
            if "size" in q:
                size = parse_int(q.get("size"), "size", session.size, 1, EVENTS_SIZE_MAX)
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
