"""Contacts (customers), spec §4.2: the scroll list, get, events, devices, accountings,
policies and delete.

Where the spec says "request and response: not shown", responses decode into a plain JSON
object (``GenericResponse``) rather than failing, and callers may pass extra query
parameters. ``get`` reads the contact from the body itself or from a ``customer`` /
``data`` member (assumption), so both plausible shapes give a typed ``Contact``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import msgspec

from asyncwifi._call import Verdict, one_object
from asyncwifi._core import RequestPipeline
from asyncwifi._options import PerCall
from asyncwifi._protocol import Tag, build_query, organization_segment, path_segment
from asyncwifi._stream import SCROLL_WINDOW, ScrollStream, StreamOptions, limited
from asyncwifi.errors import DecodeError, NotFoundError, ValidationError
from asyncwifi.models import (
    Contact,
    ContactPage,
    GenericResponse,
    Policy,
    decode_generic,
    encode,
    generic_objects,
)
from asyncwifi.ratelimit import Lane

__all__ = ["MAX_SIZES", "ContactScroll", "Contacts", "PageSize", "page_size"]

#: the page sizes ``size="max"`` tries, largest first: the vendor documents up to 10,000
#: (observed.md), the reference shows 100 (spec §4.2)
MAX_SIZES = (10_000, 1_000, 100)

#: a contact page size: ``"max"`` (the largest the server accepts, learnt) or a number
PageSize = int | Literal["max"]


def page_size(size: object, what: str = "size") -> PageSize:
    """The contact list's page size, checked: the one rule for it, wherever it is given
    (``contacts.list``, the export, the dlt source). ``"max"`` asks for the largest page
    the server accepts (:data:`MAX_SIZES`, learnt once per client); a number must be from 1
    to 10,000 (the vendor's documented range) and is sent as is, never changed."""
    if size == "max":
        return "max"
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_SIZES[0]:
        raise ValidationError(
            f"{what} must be 'max' or an integer from 1 to {MAX_SIZES[0]:,}, got {size!r}"
        )
    return size


#: the wire names of a contact's fields (spec §2.1)
_CONTACT_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(Contact))


def _contact_of(body: bytes | memoryview) -> Contact | None:
    """The contact a ``GET /v2/customers/{cid}`` body holds (the body itself, or its
    ``customer`` / ``contact`` / ``data`` member), or None when it holds none: no field of a
    contact has a value (``{"status": "OK"}``, ``{"customer": {}}``)."""
    data = decode_generic(body, what="contact")
    for key in ("customer", "contact", "data"):
        inner = data.get(key)
        if isinstance(inner, dict) and "cid" not in data:
            data = inner
            break
    if not any(data.get(name) is not None for name in _CONTACT_FIELDS):
        return None
    try:
        # read as the lists are (models._decode.RESPONSES_STRICT): an integral float is an int
        return msgspec.convert(data, Contact, str_keys=True, strict=False)
    except msgspec.ValidationError as exc:
        raise DecodeError(f"invalid contact: {exc}", raw=bytes(body[:1024])) from None


class LargestPage:
    """The largest page size the server accepted for ``size="max"`` (None: not learnt yet),
    learnt once per client: the first list that asks remembers it here."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        self.size: int | None = None


class ContactScroll:
    """The contacts scroll (spec §4.2), as the stream asks it (a
    :class:`~asyncwifi._stream.ScrollKind`): ``sId`` continues it, the envelope's
    ``totalCount`` says how many there are, and when ``resumable`` an expiry is resumed by
    a re-scan (the records carry no time). ``learn``: a ``size="max"`` list not learnt
    yet, which steps down :data:`MAX_SIZES` after a 409 and remembers the size accepted."""

    __slots__ = ("_learn", "params", "path", "resumable", "size")

    what: ClassVar[Tag] = "contacts"
    page_type: ClassVar[type[Any]] = ContactPage
    record_time: ClassVar[None] = None
    ordered: ClassVar[bool] = False
    short_ends: ClassVar[bool] = False
    rescan_size: ClassVar[None] = None
    #: a contacts scroll has no time to restart from: its pages are its size from the first
    first: ClassVar[None] = None
    objects: ClassVar[None] = None

    def __init__(
        self,
        path: str,
        params: Mapping[str, str],
        size: int,
        *,
        resumable: bool,
        learn: LargestPage | None = None,
    ) -> None:
        self.path = path
        self.params = params
        self.size = size
        self.resumable = resumable
        self._learn = learn

    def next(self, scroll_id: str) -> dict[str, str]:
        # spec §4.2: the next request carries the latest sId, the filters unchanged
        return {**self.params, "sId": scroll_id}

    def restart(self, since: str | None) -> dict[str, str] | None:
        return dict(self.params) if self.resumable else None

    def envelope(self, envelope: Any) -> tuple[int | None, str | None]:
        return envelope.total_count, envelope.s_id

    def smaller(self, refused: int) -> int | None:
        """The next of :data:`MAX_SIZES` below ``refused`` while learning; None when none is
        left (the refusal stands) or the size was the caller's."""
        if self._learn is None:
            return None
        return next((size for size in MAX_SIZES if size < refused), None)

    def accepted(self, size: int) -> None:
        if self._learn is not None:
            self._learn.size = size

    def timed(self, timed: bool) -> None:
        pass  # no small first page (``first`` is None)


class Contacts(PerCall):
    """``api.contacts``: spec §4.2."""

    __slots__ = ("_api", "_largest", "_org", "_window")

    def __init__(
        self, api: RequestPipeline, organization: str | None, window: float = SCROLL_WINDOW
    ) -> None:
        self._api = api
        self._org = organization
        self._window = window
        #: the largest page size the server accepted for ``size="max"``
        self._largest = LargestPage()

    @property
    def largest_page_size(self) -> int | None:
        """The page size the server accepted for ``size="max"``, once a list learnt it."""
        return self._largest.size

    def list(
        self,
        *,
        has_email: bool | None = None,
        has_phone: bool | None = None,
        age_verification: bool | None = None,
        segment_id: str | None = None,
        sort_by: str | None = "created_absolute",
        sort_reverse: bool | None = None,
        size: PageSize = "max",
        organization: str | None = None,
        resume: bool = False,
        extra_params: Mapping[str, object] | None = None,
        options: StreamOptions | None = None,
        limit: int | None = None,
    ) -> ScrollStream[Contact]:
        """Stream every contact matching the filters through a scroll (spec §4.2).

        ``segment_id`` is sent as ``segmentId`` (the name is "not shown": assumption).
        On an expired scroll this raises :class:`~asyncwifi.errors.ScrollExpiredError`
        saying how many were delivered, unless ``resume=True``, which re-scans and skips
        the contacts already delivered (it keeps their ids in memory).

        ``size`` (see :func:`page_size`): ``"max"`` by default, the largest page the server
        accepts, learnt once per client (a refused size costs one 409, paid once).
        ``options``: how the stream is consumed (a :class:`~asyncwifi.StreamOptions`);
        ``limit``: at most this many contacts, and no page read past them.
        """
        options = limited(options, limit)
        size = page_size(size)
        flags = {"has_email": has_email, "has_phone": has_phone, "sort_reverse": sort_reverse,
                 "age_verification": age_verification}  # fmt: skip
        for what, flag in flags.items():  # a 1462 is not a filter: refused before a request
            if flag is not None and not isinstance(flag, bool):
                raise ValidationError(f"{what} must be True, False or None, got {flag!r}")
        learning = size == "max" and self._largest.size is None
        if size == "max":
            # the largest page the server accepts, learnt once per client: the reference
            # shows 100, the vendor documents up to 10,000 (observed.md); a 409 says no
            size = self._largest.size or MAX_SIZES[0]
        org = organization_segment(organization, self._org)
        params = build_query(
            {
                "sortBy": sort_by,
                "sortReverse": sort_reverse,
                "hasEmail": has_email,
                "hasPhone": has_phone,
                "ageVerification": age_verification,
                "segmentId": segment_id,
            },
            extra_params,
        )
        kind = ContactScroll(
            f"/v2/customers/organizations/{org}",
            params,
            size,
            resumable=resume,
            learn=self._largest if learning else None,
        )
        return ScrollStream(self._api, kind, options, window=self._window)

    async def get(self, cid: str) -> Contact:
        """One contact by id (response shape "not shown": see the module doc)."""
        path = f"/v2/customers/{path_segment(cid, 'cid')}"
        contact = await self._api.read(
            "GET",
            path,
            tag="contacts",
            lane=Lane.INTERACTIVE,
            decode=_contact_of,
            count=lambda found: int(found is not None),
        )
        if contact is None:
            # as hotspots.get: a 200 with nothing in it is no contact, not an empty one
            raise NotFoundError(
                "the response holds no contact", status=404, method="GET", path=path
            )
        return contact

    async def _generic(
        self, suffix: str, cid: str, extra: Mapping[str, object] | None, tag: Tag = "contacts"
    ) -> GenericResponse:
        path = f"/v2/customers/{path_segment(cid, 'cid')}/{suffix}"
        return await self._api.read(
            "GET",
            path,
            tag=tag,
            params=build_query({}, extra) or None,
            lane=Lane.INTERACTIVE,
            decode=lambda b: decode_generic(b, what=f"contact {suffix}"),
            count=generic_objects,
        )

    async def events(
        self, cid: str, *, extra_params: Mapping[str, object] | None = None
    ) -> GenericResponse:
        """``GET /v2/customers/{cid}/events`` (shape not shown: a plain JSON object)."""
        return await self._generic("events", cid, extra_params, "events")  # events, not contacts

    async def devices(
        self, cid: str, *, extra_params: Mapping[str, object] | None = None
    ) -> GenericResponse:
        """``GET /v2/customers/{cid}/devices`` (shape not shown: a plain JSON object)."""
        return await self._generic("devices", cid, extra_params)

    async def accountings(
        self, cid: str, *, extra_params: Mapping[str, object] | None = None
    ) -> GenericResponse:
        """``GET /v2/customers/{cid}/accountings`` (shape not shown: a plain JSON object)."""
        return await self._generic("accountings", cid, extra_params)

    async def update_policies(
        self, cid: str, policies: Sequence[Policy | Mapping[str, Any]]
    ) -> GenericResponse:
        """``PUT /v1/customers/{cid}/policies`` with ``{"policies": [...]}`` (assumption:
        the payload is not shown). Checked with a lookup after an ambiguous outcome."""
        path = f"/v1/customers/{path_segment(cid, 'cid')}/policies"
        items: list[Policy] = []
        for policy in policies:
            if isinstance(policy, Mapping):
                try:
                    policy = msgspec.convert(policy, Policy)
                except msgspec.ValidationError as exc:
                    raise ValidationError(f"invalid policy: {exc}") from None
            if not isinstance(policy, Policy) or not policy.name:
                raise ValidationError("every policy needs a name")
            items.append(policy)
        if not items:
            raise ValidationError("policies must not be empty")
        wanted = {p.name: p.accepted for p in items}

        async def verify() -> Verdict[GenericResponse]:
            contact = await self.get(cid)
            current = {p.name: p.accepted for p in contact.policies or []}
            done = all(current.get(name) == accepted for name, accepted in wanted.items())
            return Verdict(done, {"status": "OK", "verified": True})

        return await self._api.write(
            "PUT",
            path,
            tag="contacts",
            body=encode({"policies": items}),
            decode=lambda b: decode_generic(b, what="policies"),
            verify=verify,
            count=one_object,
        )

    async def delete(self, cid: str) -> GenericResponse:
        """``DELETE /v1/customers/{cid}``; an ambiguous outcome is checked with a lookup."""
        path = f"/v1/customers/{path_segment(cid, 'cid')}"

        async def verify() -> Verdict[GenericResponse]:
            try:
                await self.get(cid)
            except NotFoundError:
                return Verdict(True, {"status": "OK", "verified": True})
            return Verdict(False)

        return await self._api.write(
            "DELETE",
            path,
            tag="contacts",
            decode=lambda b: decode_generic(b, what="delete"),
            verify=verify,
            count=one_object,
        )
