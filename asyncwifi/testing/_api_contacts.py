"""Contacts (spec §4.2) and the login/logout endpoints (spec §4.1, §5)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from asyncwifi.testing._api import (
    DEFAULT_PAGE,
    TOKEN,
    ApiBase,
    ApiFault,
    json_body,
    json_response,
    touch,
)
from asyncwifi.testing._data import SimulatorData, _contact, served
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

__all__ = [
    "CONTACT_SORTS",
    "MODIFIED_FROM",
    "MODIFIED_TO",
    "ContactsApi",
    "add_contact",
    "modify_contact",
]

# observed.md: the vendor documents sortBy modified_absolute too
CONTACT_SORTS = ("created_absolute", "created", "modified_absolute", "modified", "lastLogin")
#: observed.md: modified-date filters (>= and <=) exist, their names are not shown: ours
MODIFIED_FROM = "modifiedFrom"
MODIFIED_TO = "modifiedTo"
_SORT_KEYS = {
    "created_absolute": "_created",
    "created": "_created",
    "modified_absolute": "_modified",
}


#: the boolean filters (spec §4.2)
_FLAGS = ("hasEmail", "hasPhone", "ageVerification")


@dataclass(frozen=True, slots=True)
class _ContactQuery:
    """A contact list's parameters, checked (a bad one is a 409, spec §7)."""

    size: int
    sort: str
    reverse: bool
    #: (filter, wanted) for each boolean filter given
    flags: tuple[tuple[str, bool], ...]
    segment: str | None
    modified_from: float | None
    modified_to: float | None


def _contact_query(q: Mapping[str, str], max_size: int) -> _ContactQuery:
    sort = q.get("sortBy", "created_absolute")
    if sort not in CONTACT_SORTS:
        raise BadParameter(f"sortBy must be one of {', '.join(CONTACT_SORTS)}")
    flags = tuple((param, parse_bool(q[param], param)) for param in _FLAGS if param in q)
    bounds = [parse_instant(q[p], p) if p in q else None for p in (MODIFIED_FROM, MODIFIED_TO)]
    return _ContactQuery(
        size=parse_int(q.get("size"), "size", DEFAULT_PAGE, 1, max_size),
        sort=sort,
        reverse=parse_bool(q.get("sortReverse"), "sortReverse"),
        flags=flags,
        segment=q.get("segmentId"),
        modified_from=bounds[0],
        modified_to=bounds[1],
    )


def _matches(contact: dict[str, Any], flag: str, want: bool) -> bool:
    """Whether ``contact`` passes a boolean filter: it has an email, a phone (or not); its
    age verification is ``want`` (unknown passes neither)."""
    if flag == "ageVerification":
        return contact["ageVerification"] is want
    return bool(contact["email" if flag == "hasEmail" else "phone"]) == want


def add_contact(data: SimulatorData, now: float, **fields: Any) -> str:
    """Create a contact upstream (as a splash-page sign-up would: the API has no create),
    created and modified at ``now``; ``fields`` override generated ones. Returns its cid."""
    index = len(data.contact_order)
    rnd = random.Random(mix(data.seed, 0xADD, index))
    c = _contact(rnd, data.seed, index, data.organization, data.locations[0])
    c["created"] = c["createdBusiness"] = c["modified"] = iso_z(now)
    c["_created"] = c["_modified"] = now
    c.update(fields)
    data._contacts[c["cid"]] = c
    data.contact_order.append(c["cid"])
    return str(c["cid"])


def modify_contact(data: SimulatorData, cid: str, now: float, **fields: Any) -> None:
    """Change a live contact's public fields upstream; its ``modified`` becomes ``now``."""
    c = data.contact(cid)
    if c is None:
        raise KeyError(cid)
    c.update(fields)
    c["modified"], c["_modified"] = iso_z(now), now


class ContactsApi(ApiBase):
    """Authentication and contact endpoints."""

    # -- authentication (spec §4.1, §5) ----------------------------------------------------

    async def login(self, request: web.Request) -> web.Response:
        """POST /v1/sts/login/services: ``{clientKey, clientSecret}`` -> ``{token}`` or 401.

        A body that is not JSON is a 409; missing or wrong credentials, or a revoked key,
        are a 401.
        """
        body = await json_body(request)
        sim = self.sim
        ok = (
            not sim.key_revoked
            and isinstance(body, dict)
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

        Filters: ``hasEmail``, ``hasPhone``, ``ageVerification`` (booleans), ``segmentId``
        (a segment id; unknown: 404), ``modifiedFrom``/``modifiedTo`` (ISO 8601, inclusive,
        on ``modified``: observed.md, names ours). ``sortBy``: created_absolute (default),
        created, modified_absolute, modified, lastLogin; ``sortReverse``; ``size`` 1..10000
        (observed.md; default 100; more is a 409). The first
        request opens a point-in-time snapshot; ``sId`` continues it (filters and size then
        come from the snapshot, but a malformed parameter is a 409 there too, as on the events
        path). Contacts deleted meanwhile are skipped.
        """
        self._org(request)
        q = request.query
        now = self._now()
        sim = self.sim
        # every parameter is checked as on a first request, a continuation's too (a
        # ``hasEmail=1462`` is a 409 either way); a continuation's filters are its scroll's
        query = _contact_query(q, sim.contacts_max_size)
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
            rows = list(self.data.live_contacts())
            for flag, want in query.flags:
                rows = [c for c in rows if _matches(c, flag, want)]
            segment = query.segment
            if segment is not None:
                if not any(s["id"] == segment for s in self.data.segments):
                    raise ApiFault(404, "Segment not found")
                rows = [c for c in rows if any(s["cid"] == segment for s in c["segments"])]
            bounds = ((query.modified_from, float.__ge__), (query.modified_to, float.__le__))
            for bound, keep in bounds:
                if bound is not None:
                    rows = [c for c in rows if keep(float(c["_modified"]), bound)]
            key = _SORT_KEYS.get(query.sort, "_" + query.sort)
            rows.sort(key=lambda c: (c[key], c["_index"]), reverse=query.reverse)
            session = ScrollSession("contacts", [c["cid"] for c in rows], query.size)
            pos = 0
            sim.counters.scrolls_started += 1
        cids = session.items[pos : pos + session.size]
        page = [c for c in map(self.data.contact, cids) if c is not None]
        new_sid = sim.scrolls.issue(session, pos + len(cids), now)
        touch(request, "contacts", len(page))
        sim.counters.contacts_served += len(page)
        return self._contacts_page(page, session.total, new_sid, now)

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
                "customers": [served(c) for c in page],
            }
        )

    async def contact_get(self, request: web.Request) -> web.Response:
        """GET /v2/customers/{cid}: ``{status, generated, customer}``; 404 if unknown.

        The single-contact shape has ``age`` as a string (spec §2.1: "a string in the
        generic shape"); the list has it as a number.
        """
        c = self._contact(request.match_info["cid"])
        shown = served(c)
        shown["age"] = str(shown["age"])
        touch(request, "contacts", 1)
        return json_response({"status": "OK", "generated": iso_ms(self._now()), "customer": shown})

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
        touch(request, "contacts", len(devices))
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
        touch(request, "contacts", len(rows))
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
        body = await json_body(request)
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
        touch(request, "contacts", 1)
        return json_response({"status": "OK", "generated": iso_ms(now), "policies": c["policies"]})

    async def contact_delete(self, request: web.Request) -> web.Response:
        """DELETE /v1/customers/{cid}: ``{status, generated}``; the contact is gone (404 after)."""
        cid = request.match_info["cid"]
        self._contact(cid)
        self.data.delete_contact(cid)
        touch(request, "contacts", 1)
        return json_response({"status": "OK", "generated": iso_ms(self._now())})
