"""Segments, spec §4.4: listed only (they are edited on the dashboard)."""

from __future__ import annotations

from collections.abc import Mapping

from asyncwifi._core import Api
from asyncwifi._protocol import build_query, path_segment
from asyncwifi.errors import ValidationError
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
        org = organization or self._org
        if org is None:
            raise ValidationError("no organization: pass organization= or set it on the Client")
        path = f"/v2/segments/organizations/{path_segment(org, 'organization')}"
        page = await self._api.read(
            "GET",
            path,
            params=build_query({}, extra_params) or None,
            lane=Lane.INTERACTIVE,
            decode=lambda b: decode(b, SegmentPage),
        )
        return list(page.segments or [])
