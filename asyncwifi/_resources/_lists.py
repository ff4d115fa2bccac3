"""A list read in one request (hotspots, segments): a record that does not decode is set
aside as the streams set theirs aside (``asyncwifi._stream``): a warning, ``on_item_error``,
and the list of every record that did decode, instead of an exception for the whole list."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from asyncwifi._protocol import Tag
from asyncwifi.models import DecodedPage, ItemError

__all__ = ["OnItemError", "kept"]

log = logging.getLogger("asyncwifi.decode")

#: called with each record of a list that did not decode (it is not in the list)
OnItemError = Callable[[ItemError], None]


def kept(page: DecodedPage[Any, Any], what: Tag, on_item_error: OnItemError | None) -> list[Any]:
    """The records of ``page`` that decoded; each that did not is logged and given to
    ``on_item_error`` (the streams' words: ``stream.errors``, docs/guides/streams.md)."""
    for error in page.errors:
        log.warning("%s: a record did not decode and was set aside: %s", what, error)
        if on_item_error is not None:
            on_item_error(error)
    return list(page.items)
