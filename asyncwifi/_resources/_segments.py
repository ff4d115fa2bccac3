"""Segments, spec §4.4: listed only (they are edited on the dashboard)."""

from __future__ import annotations

from collections.abc import Mapping

from asyncwifi._core import RequestPipeline
from asyncwifi._options import PerCall
from asyncwifi._protocol import build_query, organization_segment
from asyncwifi._resources._lists import OnItemError, kept
from asyncwifi.models import DecodedPage, Segment, SegmentPage, decode_page
from asyncwifi.ratelimit import Lane

__all__ = ["Segments"]


class Segments(PerCall):
    """``api.segments``: spec §4.4."""

    __slots__ = ("_api", "_org")

    def __init__(self, api: RequestPipeline, organization: str | None) -> None:
        self._api = api
        self._org = organization

    async def list(
        self,
        *,
        organization: str | None = None,
        extra_params: Mapping[str, object] | None = None,
        on_item_error: OnItemError | None = None,
    ) -> list[Segment]:
        """Every segment of the organization that decodes; one that does not is set aside
        (a warning, and ``on_item_error`` with its :class:`~asyncwifi.models.ItemError`), as
        a stream sets its records aside: it never costs the others."""
        page = await self.page(organization=organization, extra_params=extra_params)
        return kept(page, "segments", on_item_error)

    async def page(
        self,
        *,
        organization: str | None = None,
        extra_params: Mapping[str, object] | None = None,
        keep_raw: bool = False,
    ) -> DecodedPage[SegmentPage, Segment]:
        """Like :meth:`list`, as the decoded page: a segment that does not decode is on
        ``errors`` (with its bytes) instead of failing the rest; ``keep_raw`` also gives
        each segment's exact bytes (``raw_items``)."""
        path = f"/v2/segments/organizations/{organization_segment(organization, self._org)}"
        return await self._api.read(
            "GET",
            path,
            tag="segments",
            params=build_query({}, extra_params) or None,
            lane=Lane.INTERACTIVE,
            decode=lambda b: decode_page(b, SegmentPage, keep_raw=keep_raw),
            count=lambda page: page.objects,
        )
