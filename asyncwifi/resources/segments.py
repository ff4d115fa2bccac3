"""Segments, spec §4.4: listed only (they are edited on the dashboard)."""

from __future__ import annotations

from collections.abc import Mapping

from asyncwifi._core import Api
from asyncwifi._protocol import build_query, organization_segment
from asyncwifi.models import Segment, SegmentPage, decode
from asyncwifi.ratelimit import Lane

__all__ = ["Segments"]


class Segments:
    """``api.segments``: spec §4.4."""

    __slots__ = ("_api", "_org")

    def __init__(self, api: Api, organization: str | None) -> None:
        self._api = api
        self._org = organization

    async def list(
        self, *, organization: str | None = None, extra_params: Mapping[str, object] | None = None
    ) -> list[Segment]:
        """Every segment of the organization."""
        path = f"/v2/segments/organizations/{organization_segment(organization, self._org)}"
        page = await self._api.read(
            "GET",
            path,
            params=build_query({}, extra_params) or None,
            lane=Lane.INTERACTIVE,
            decode=lambda b: decode(b, SegmentPage),
        )
        return list(page.segments or [])
