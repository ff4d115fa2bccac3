"""How one simulated event is written on the wire, in each of the three record shapes.

``observed.md`` shows the vendor's reference serving events in two shapes, and the
simulator has served a third of its own; a client must work on each (docs/design.md, "The
simulator is not the API"):

* ``"nested"`` (the default: the vendor's data example, pasted from real responses):
  ``organizationId``, ``customerId``, ``event{type,id}``, ``where{locationId,locationName,
  hotspotId}``, ``when{createdAt,createdAtLocal,timezone}``. ``createdAt`` is UTC;
  ``createdAtLocal`` is the venue's local wall time written with a ``Z`` anyway.
* ``"flat"`` (the schema of spec §2.4): ``type``, ``id`` and a sub-object, **no time at
  all**: the harshest shape for a client that needs to resume or slice by time.
* ``"dated"`` (legacy, for benchmarks and back-compat): flat plus a ``date`` field (UTC).

The type's sub-object (``visit``, ``email``...) is carried by every shape.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "EVENT_SHAPES",
    "EmailInfo",
    "EventShape",
    "Flat",
    "Nested",
    "Promo",
    "Signup",
    "SmsInfo",
    "Survey",
    "Visit",
    "What",
    "When",
    "Where",
]

EventShape = Literal["nested", "flat", "dated"]
EVENT_SHAPES: tuple[str, ...] = ("nested", "flat", "dated")


class Visit(msgspec.Struct, gc=False):
    startAt: str
    startAtLocal: str
    timezone: str
    duration: int


class Signup(msgspec.Struct, gc=False):
    source: str


class EmailInfo(msgspec.Struct, gc=False):
    campaignId: str
    communicationId: str
    channel: str
    campaignName: str
    email: str


class SmsInfo(msgspec.Struct, gc=False):
    campaignId: str
    communicationId: str
    channel: str
    campaignName: str
    phone: str
    prefix: str


class Survey(msgspec.Struct, gc=False):
    campaignId: str
    campaignName: str
    answerId: str
    questions: dict[str, str]
    answers: dict[str, str]


class Promo(msgspec.Struct, gc=False):
    type: str


class Flat(msgspec.Struct, omit_defaults=True, gc=False):
    """The spec's flat record (``date`` only in the legacy ``"dated"`` shape)."""

    type: str
    id: str
    date: str | None = None
    visit: Visit | None = None
    signup: Signup | None = None
    email: EmailInfo | None = None
    sms: SmsInfo | None = None
    survey: Survey | None = None
    promo: Promo | None = None


class What(msgspec.Struct, gc=False):
    type: str
    id: str


class Where(msgspec.Struct, gc=False):
    locationId: str
    locationName: str
    hotspotId: str


class When(msgspec.Struct, gc=False):
    #: UTC, ``...Z``
    createdAt: str
    #: the venue's local wall time, written with a ``Z`` although it is not UTC
    createdAtLocal: str
    timezone: str


class Nested(msgspec.Struct, omit_defaults=True, gc=False):
    """The vendor's nested record (observed.md, "Event records come in two shapes")."""

    organizationId: str
    customerId: str
    event: What
    where: Where
    when: When
    visit: Visit | None = None
    signup: Signup | None = None
    email: EmailInfo | None = None
    sms: SmsInfo | None = None
    survey: Survey | None = None
    promo: Promo | None = None
