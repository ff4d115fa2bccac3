"""Segments: spec §2.3 and the list envelope of §4.4 (the API only lists them)."""

from __future__ import annotations

from asyncwifi.models._base import Model

__all__ = ["Segment", "SegmentPage"]


class Segment(Model):
    """A segment: a dynamic group of contacts; its ``id`` filters the contact list."""

    id: str | None = None
    name: str | None = None
    description: str | None = None
    last_run: str | None = None
    created: str | None = None
    modified: str | None = None
    # spec §3: allowed values not shown, so a plain string
    segment_status: str | None = None
    #: spec §2.3: "number" (of contacts), as the server wrote it: an int, or a float
    audience: int | float | None = None


class SegmentPage(Model):
    """``GET /v2/segments/organizations/{cid}`` response (spec §2.3)."""

    generated: str | None = None
    size: int | None = None
    segments: list[Segment] | None = None
