"""Events of the events API: spec §2.4, §4.5 and §6.1.

``type`` is a plain string, never an enum, so an event type the SDK does not know decodes
like any other; which sub-object is filled depends on it.
"""

from __future__ import annotations

from asyncwifi.models._base import Model

__all__ = [
    "EmailInfo",
    "Event",
    "EventPage",
    "Promo",
    "Signup",
    "SmsInfo",
    "Survey",
    "Visit",
]


class Visit(Model):
    """``visit`` sub-object: when and how long a contact stayed at a location."""

    #: ISO 8601 UTC
    start_at: str | None = None
    #: the location's local time, no zone (see ``timezone``)
    start_at_local: str | None = None
    timezone: str | None = None
    #: seconds (a number; integral or not)
    duration: float | None = None


class Signup(Model):
    """``signup`` sub-object."""

    source: str | None = None


class EmailInfo(Model):
    """``email`` sub-object of the email campaign events (send/open/click_email)."""

    campaign_id: str | None = None
    communication_id: str | None = None
    channel: str | None = None
    campaign_name: str | None = None
    email: str | None = None


class SmsInfo(Model):
    """``sms`` sub-object of the SMS campaign events (send/click_sms)."""

    campaign_id: str | None = None
    communication_id: str | None = None
    channel: str | None = None
    campaign_name: str | None = None
    phone: str | None = None
    prefix: str | None = None


class Survey(Model):
    """``survey`` sub-object: the questions and the contact's answers, keyed by id."""

    campaign_id: str | None = None
    campaign_name: str | None = None
    answer_id: str | None = None
    questions: dict[str, str] | None = None
    answers: dict[str, str] | None = None


class Promo(Model):
    """``promo`` sub-object."""

    type: str | None = None


class Event(Model):
    """One event record (spec §2.4).

    ``date`` is not in the spec: it is the SDK's assumption that records carry their event
    time (needed to resume a backfill by time). Nothing requires it; it is ``None`` when
    absent.
    """

    type: str | None = None
    id: str | None = None
    # assumption (not in spec §2.4): the event's time, ISO 8601. Third, as served: msgspec
    # matches each key against the field after the previous one first (fewer compares)
    date: str | None = None
    visit: Visit | None = None
    signup: Signup | None = None
    email: EmailInfo | None = None
    sms: SmsInfo | None = None
    survey: Survey | None = None
    promo: Promo | None = None


class EventPage(Model):
    """The event envelope (spec §2.4), with ``scrollId`` when scrolling (spec §4.5)."""

    status: str | None = None
    generated: str | None = None
    count: int | None = None
    events: list[Event] | None = None
    # spec §4.5: with enableScroll=true the response carries the next page's scroll id
    scroll_id: str | None = None
