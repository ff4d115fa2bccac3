"""Contacts (customers): spec §2.1 and the contact list envelope of §4.2.

Every field is optional and nullable: the spec says the contact "differs between
endpoints" and leaves required fields "not shown", so a missing or null value never fails
decoding. The record's numbers (``age``, ``logins``, the metrics) are "number" (spec §2.1),
read as the server wrote them, int or float: the SDK computes nothing with them, so 2.5
visits costs nothing; only the envelope's counts, which the scroll counts with, are ints
(read from an integral float too, see :mod:`asyncwifi.models._decode`). Timestamps stay
as the server wrote them (text; a policy's date may be epoch seconds: :attr:`Policy.time`).
"""

from __future__ import annotations

from datetime import datetime

from asyncwifi._instant import parse_timestamp
from asyncwifi.models._base import KeyValue, Model

__all__ = [
    "Contact",
    "ContactPage",
    "CustomField",
    "ExtId",
    "Metrics",
    "Policy",
    "SegmentRef",
]


class Metrics(Model):
    """A contact's visit metrics (spec §2.1, "Metrics object"): every number as the server
    wrote it (an int, or a float: spec §2.1 says "number"), never a reason to set the
    contact aside."""

    frequency_monthly_visit: float | None = None
    compass_top_location: str | None = None
    compass_top_location_count: int | float | None = None
    top_frequency_buckets: str | None = None
    last_visit_venue: str | None = None
    pref_visit_w_day: int | float | None = None
    #: ISO 8601 UTC
    last_visit_date_utc: str | None = None
    avg_visit_length: float | None = None
    count_visited_locations: int | float | None = None
    pref_visit_timebucket: str | None = None
    pref_visit_time_hour: str | None = None
    #: ISO 8601, the location's local (business) time, no zone
    last_visit_date_business: str | None = None
    count_total_visits: int | float | None = None
    conversion_rate: float | None = None
    avg_days_between_visits: float | None = None


class Policy(Model):
    """One consent the contact gave or refused (termsOfUse, privacy, mktgCommunications, ...).

    ``date`` is a "timestamp" of no stated type (spec §2.1): ISO 8601 text, or epoch
    seconds as the webhooks' consents carry it (spec §6.2). Both are kept as the server
    wrote them; :attr:`time` reads either (``None`` for a date that is neither), so a date
    in an unexpected form never costs the contact.
    """

    name: str | None = None
    accepted: bool | None = None
    date: str | float | None = None
    version: str | None = None

    @property
    def time(self) -> datetime | None:
        """``date`` as an aware UTC ``datetime``; ``None`` when absent or unreadable."""
        try:
            return parse_timestamp(self.date)
        except (ValueError, OverflowError, OSError):
            return None  # text that is no time, or a number out of any calendar's range


class SegmentRef(Model):
    """A segment the contact belongs to: ``{cid, name}``."""

    cid: str | None = None
    name: str | None = None


class ExtId(Model):
    """External identifiers of a contact (``extId``); the object may be empty."""

    id: str | None = None
    prop1: str | None = None
    prop2: str | None = None


class CustomField(KeyValue):
    """One dashboard-defined custom field (``genericCustomField`` item): ``{key, value}``."""


class Contact(Model):
    """A contact (customer), the general shape of spec §2.1."""

    cid: str | None = None
    title: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    gender: str | None = None
    #: year only
    birth_date: str | None = None
    #: MM-DD
    birth_day: str | None = None
    # spec §2.1: a number, but a string in the generic shape
    age: int | float | str | None = None
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
    #: ISO 8601 with milliseconds
    last_login: str | None = None
    logins: int | float | None = None
    # spec §2.1: a string (not an array), unlike ``segments``
    segment_cids: str | None = None
    segments: list[SegmentRef] | None = None
    policies: list[Policy] | None = None
    ext_id: ExtId | None = None
    language: str | None = None
    splash_language: str | None = None
    generic_custom_field: list[CustomField] | None = None
    metrics: Metrics | None = None


class ContactPage(Model):
    """The contact list envelope (spec §2.1): one scroll page of contacts.

    ``s_id`` (wire ``sId``) is the scroll id to send with the next request (spec §4.2).
    """

    generated: str | None = None
    total_count: int | None = None
    count: int | None = None
    s_id: str | None = None
    customers: list[Contact] | None = None
