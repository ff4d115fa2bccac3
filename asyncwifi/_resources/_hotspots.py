"""Hotspots (access points), spec §4.3: list with every filter, get, create, update, delete.

Create and update are validated before any request is spent (spec §4.3 rules, plus our
documented router-type table in ``asyncwifi._rules``). Writes are never repeated blindly:
after an ambiguous outcome the hotspot is looked up (by identifier or MAC address for a
create, by id for an update or delete) to learn whether the write took effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import msgspec

from asyncwifi._call import Verdict, one_object
from asyncwifi._core import RequestPipeline
from asyncwifi._defaults import HOTSPOTS_CHANGED
from asyncwifi._instant import parse_day
from asyncwifi._options import PerCall
from asyncwifi._protocol import build_query, organization_segment, path_segment, require_text
from asyncwifi._resources._lists import OnItemError, kept
from asyncwifi._rules import ADDRESS_FIELDS, COUNTRY_CODES, HOTSPOT_UPDATE_FORBIDDEN, ROUTER_TYPES
from asyncwifi.errors import NotFoundError, ValidationError
from asyncwifi.models import (
    DecodedPage,
    Hotspot,
    HotspotCreate,
    HotspotDeleteResult,
    HotspotEnvelope,
    HotspotPage,
    HotspotUpdate,
    HotspotWriteResult,
    decode,
    decode_page,
    encode,
)
from asyncwifi.ratelimit import Lane

__all__ = ["Hotspots", "validate_create", "validate_update"]

#: the object name of the per-object daily limit (X-RateLimit-Limit-Hotspots-Day; the
#: names are "not shown": assumption). Lookups that confirm a write pass ``objects=None``:
#: they must not wait a day for the quota they are checking.
OBJECTS = "hotspots"


def _by_id(hotspot_id: str) -> str:
    return f"/v3/hotspots/{path_segment(hotspot_id, 'hotspot_id')}"


def _by_identifier(hotspot_identifier: str) -> str:
    return f"/v3/hotspots/identifier/{path_segment(hotspot_identifier, 'hotspot_identifier')}"


def _set(value: object) -> bool:
    return value is not msgspec.UNSET and value is not None


def _check_country(value: object) -> None:
    if _set(value) and (not isinstance(value, str) or value.upper() not in COUNTRY_CODES):
        raise ValidationError(f"country must be an ISO 3166-1 alpha-2 code, got {value!r}")


def _check_coordinates(body: HotspotCreate | HotspotUpdate) -> None:
    lat, lon = body.latitude, body.longitude
    if _set(lat) and not -90.0 <= float(lat) <= 90.0:  # type: ignore[arg-type]
        raise ValidationError(f"latitude must be within -90..90, got {lat!r}")
    if _set(lon) and not -180.0 <= float(lon) <= 180.0:  # type: ignore[arg-type]
        raise ValidationError(f"longitude must be within -180..180, got {lon!r}")


def validate_create(body: HotspotCreate, *, organization: str | None) -> HotspotCreate:
    """Check a create body against spec §4.3; fill ``organizationId`` from the client."""
    if not isinstance(body, HotspotCreate):
        raise ValidationError(f"expected a HotspotCreate, got {type(body).__name__}")
    if not _set(body.organization_id):
        if organization is None:
            raise ValidationError("organization_id is required (or give the client one)")
        body = msgspec.structs.replace(body, organization_id=organization)
    for name in ("venue_id", "name", "router_type"):
        value = getattr(body, name)
        if not _set(value):
            raise ValidationError(f"{name} is required to create a hotspot")
        require_text(value, name)
    as_location = body.address_as_location
    if as_location is msgspec.UNSET or as_location is False:
        # spec §4.3: with addressAsLocation false, country and the address are required
        missing = [
            f
            for f, attr in zip(ADDRESS_FIELDS, ("country", "address", "city", "zip"), strict=True)
            if not _set(getattr(body, attr)) or not str(getattr(body, attr)).strip()
        ]
        if missing:
            raise ValidationError(
                "address_as_location is false, so these are required: " + ", ".join(missing)
            )
    _check_country(body.country)
    _check_coordinates(body)
    rules = ROUTER_TYPES.get(str(body.router_type))
    if rules is not None:
        for wire, attr in (
            ("macAddress", "mac_address"),
            ("hotspotIdentifier", "hotspot_identifier"),
            ("ssid", "ssid"),
        ):
            present = _set(getattr(body, attr))
            if rules[wire] == "required" and not present:
                raise ValidationError(f"router type {body.router_type!r} requires {attr}")
            if rules[wire] == "forbidden" and present:
                raise ValidationError(f"router type {body.router_type!r} does not allow {attr}")
    return body


def validate_update(body: HotspotUpdate | Mapping[str, Any]) -> HotspotUpdate:
    """Check an update body (spec §4.3): forbidden properties refused, country checked.

    A mapping (wire or Python names) is accepted too, so that a forbidden property such as
    ``venueId`` gets a clear error instead of being dropped silently.
    """
    if isinstance(body, Mapping):
        forbidden = sorted(
            k
            for k in body
            if k in HOTSPOT_UPDATE_FORBIDDEN or _camel(k) in HOTSPOT_UPDATE_FORBIDDEN
        )
        if forbidden:
            raise ValidationError(
                "these properties cannot be changed on update (spec §4.3): " + ", ".join(forbidden)
            )
        known = {f.encode_name for f in msgspec.structs.fields(HotspotUpdate)}
        unknown = sorted(k for k in body if _camel(k) not in known)
        if unknown:
            raise ValidationError("unknown hotspot properties: " + ", ".join(unknown))
        try:
            body = msgspec.convert({_camel(k): v for k, v in body.items()}, HotspotUpdate)
        except msgspec.ValidationError as exc:
            raise ValidationError(f"invalid hotspot update: {exc}") from None
    if not isinstance(body, HotspotUpdate):
        raise ValidationError(f"expected a HotspotUpdate, got {type(body).__name__}")
    if all(getattr(body, f) is msgspec.UNSET for f in body.__struct_fields__):
        raise ValidationError("the update sets no field")
    _check_country(body.country)
    _check_coordinates(body)
    address_given = [getattr(body, a) for a in ("address", "city", "zip")]
    if _set(body.country) and any(
        v is None or v == "" for v in address_given if v is not msgspec.UNSET
    ):
        raise ValidationError("address fields may not be emptied while a country is set")
    return body


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _day(value: date | str, what: str) -> str:
    if isinstance(value, datetime):
        value = value.date()
    if isinstance(value, date):
        return value.isoformat()
    try:
        return parse_day(require_text(value, what)).isoformat()
    except ValueError:
        raise ValidationError(f"{what} must be a date YYYY-MM-DD, got {value!r}") from None


class Hotspots(PerCall):
    """``api.hotspots``: spec §4.3."""

    __slots__ = ("_api", "_org")

    def __init__(self, api: RequestPipeline, organization: str | None) -> None:
        self._api = api
        self._org = organization

    def _organization(self, organization: str | None) -> str:
        return organization_segment(organization, self._org)

    async def list(
        self,
        *,
        date_gt: date | str | None = None,
        date_lt: date | str | None = None,
        name: str | None = None,
        mac_address: str | None = None,
        hotspot_identifier: str | None = None,
        venue_id: str | None = None,
        deleted: bool | None = False,
        organization: str | None = None,
        extra_params: Mapping[str, object] | None = None,
        on_item_error: OnItemError | None = None,
    ) -> list[Hotspot]:
        """Hotspots of the organization matching every filter given (spec §4.3) that
        decode; one that does not is set aside (a warning, and ``on_item_error`` with its
        :class:`~asyncwifi.models.ItemError`), as a stream sets its records aside."""
        page = await self.page(
            date_gt=date_gt,
            date_lt=date_lt,
            name=name,
            mac_address=mac_address,
            hotspot_identifier=hotspot_identifier,
            venue_id=venue_id,
            deleted=deleted,
            organization=organization,
            extra_params=extra_params,
        )
        return kept(page, "hotspots", on_item_error)

    async def page(
        self,
        *,
        date_gt: date | str | None = None,
        date_lt: date | str | None = None,
        name: str | None = None,
        mac_address: str | None = None,
        hotspot_identifier: str | None = None,
        venue_id: str | None = None,
        deleted: bool | None = False,
        organization: str | None = None,
        extra_params: Mapping[str, object] | None = None,
        keep_raw: bool = False,
    ) -> DecodedPage[HotspotPage, Hotspot]:
        """Like :meth:`list`, as the decoded page: a hotspot that does not decode is on
        ``errors`` (with its bytes) instead of failing the rest; ``keep_raw`` also gives
        each hotspot's exact bytes (``raw_items``), for a sync that stores them."""
        params = build_query(
            {
                HOTSPOTS_CHANGED: None if date_gt is None else _day(date_gt, "date_gt"),
                "dateLt": None if date_lt is None else _day(date_lt, "date_lt"),
                "name": name,
                "macAddress": mac_address,
                "hotspotIdentifier": hotspot_identifier,
                "venueId": venue_id,
                "deleted": deleted,
            },
            extra_params,
        )
        return await self._read_page(organization, params, OBJECTS, keep_raw)

    async def _read_page(
        self,
        organization: str | None,
        params: dict[str, str],
        objects: str | None,
        keep_raw: bool = False,
    ) -> DecodedPage[HotspotPage, Hotspot]:
        """The page request; ``objects`` names the per-object quota it spends (``None``: a
        lookup that confirms a write, which must not wait a day for the quota it checks)."""
        return await self._api.read(
            "GET",
            f"/v3/hotspots/organizations/{self._organization(organization)}",
            tag="hotspots",
            params=params,
            lane=Lane.INTERACTIVE,
            objects=objects,
            decode=lambda b: decode_page(b, HotspotPage, keep_raw=keep_raw),
            count=lambda page: page.objects,
        )  # fmt: skip

    async def get(self, hotspot_id: str) -> Hotspot:
        """One hotspot by id."""
        return await self._one(_by_id(hotspot_id), OBJECTS)

    async def get_by_identifier(self, hotspot_identifier: str) -> Hotspot:
        """One hotspot by the identifier configured in the dashboard."""
        return await self._one(_by_identifier(hotspot_identifier), OBJECTS)

    async def _one(self, path: str, objects: str | None) -> Hotspot:
        envelope = await self._api.read(
            "GET",
            path,
            tag="hotspots",
            lane=Lane.INTERACTIVE,
            objects=objects,
            decode=lambda b: decode(b, HotspotEnvelope),
            count=lambda envelope: int(envelope.hotspot is not None),
        )
        if envelope.hotspot is None:
            raise NotFoundError(
                "the response holds no hotspot", status=404, method="GET", path=path
            )
        return envelope.hotspot

    async def create(self, body: HotspotCreate) -> HotspotWriteResult:
        """Create a hotspot; never creates two, even when the first answer is lost."""
        body = validate_create(body, organization=self._org)
        verify = None
        if _set(body.hotspot_identifier) or _set(body.mac_address):

            async def verify() -> Verdict[HotspotWriteResult]:
                found = await self._find(body)
                if found is None:
                    return Verdict(False)
                return Verdict(
                    True,
                    HotspotWriteResult(
                        status="OK", hotspot_id=found.id, location_id=found.venue_id
                    ),
                )

        return await self._api.write(
            "POST",
            "/v3/hotspots",
            tag="hotspots",
            body=encode(body),
            objects=OBJECTS,
            decode=lambda b: decode(b, HotspotWriteResult),
            verify=verify,
            count=one_object,
        )

    async def _find(self, body: HotspotCreate) -> Hotspot | None:
        """The hotspot a create body describes, if it exists (identifier first, then MAC)."""
        if _set(body.hotspot_identifier):
            try:
                return await self._one(_by_identifier(str(body.hotspot_identifier)), None)
            except NotFoundError:
                return None
        query = build_query({"macAddress": str(body.mac_address), "deleted": False})
        found = await self._read_page(str(body.organization_id), query, None)
        if found.errors:
            raise found.errors[0].to_exception()
        return found.items[0] if found.items else None

    async def update(
        self, hotspot_id: str, body: HotspotUpdate | Mapping[str, Any]
    ) -> HotspotWriteResult:
        """Update a hotspot (spec §4.3); only the fields set on ``body`` are sent."""
        checked = validate_update(body)
        path = f"/v3/hotspots/{path_segment(hotspot_id, 'hotspot_id')}"
        wanted = {
            k: v for k, v in msgspec.structs.asdict(checked).items() if v is not msgspec.UNSET
        }

        async def verify() -> Verdict[HotspotWriteResult]:
            current = await self._one(_by_id(hotspot_id), None)
            same = all(
                getattr(current, k, v) == v for k, v in wanted.items() if hasattr(current, k)
            )
            if not same:
                return Verdict(False)
            return Verdict(
                True,
                HotspotWriteResult(
                    status="OK", hotspot_id=current.id, location_id=current.venue_id
                ),
            )

        return await self._api.write(
            "PUT",
            path,
            tag="hotspots",
            body=encode(checked),
            objects=OBJECTS,
            decode=lambda b: decode(b, HotspotWriteResult),
            verify=verify,
            count=one_object,
        )

    async def delete(self, hotspot_id: str) -> HotspotDeleteResult:
        """Delete a hotspot; an ambiguous outcome is checked with a lookup."""
        path = f"/v3/hotspots/{path_segment(hotspot_id, 'hotspot_id')}"

        async def verify() -> Verdict[HotspotDeleteResult]:
            try:
                current = await self._one(_by_id(hotspot_id), None)
            except NotFoundError:
                return Verdict(True, HotspotDeleteResult(status="OK"))
            return Verdict(bool(current.deleted), HotspotDeleteResult(status="OK"))

        return await self._api.write(
            "DELETE",
            path,
            tag="hotspots",
            objects=OBJECTS,
            decode=lambda b: decode(b, HotspotDeleteResult),
            verify=verify,
            count=one_object,
        )
