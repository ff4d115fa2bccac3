"""What the stream asks of a resource's scroll: a :class:`ScrollKind` (h11 style: an object
the stream asks, not closures it is handed).

A kind knows its resource's side of spec §3: where the first request goes and with what
query, how the next request names the scroll id, how a fresh query restarts from a UTC time
(for a resume), what a page's envelope says (total, scroll id) and what time a record was
written at, and, for a page size the server may refuse, the smaller size to ask for after a
409 and where the accepted one is remembered. One kind per resource lives beside it
(``_resources._contacts.ContactScroll``, ``_resources._events.EventScroll``); the stream's
own tuning (prefetch, buffers, spill budget) is a :class:`~asyncwifi._stream.StreamOptions`.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, Protocol

from asyncwifi._protocol import Tag

__all__ = ["ScrollKind"]


class ScrollKind(Protocol):
    """One scroll of a resource, as the stream asks it (one class per resource).

    The attributes are fixed when the kind is built; the methods are the questions the
    stream asks page by page. A protocol, not a base class: the kinds live in their
    resources' modules, and the stream's path enters no module for them."""

    #: the resource: the stream's name in logs and errors, and the limiter's tag for its
    #: requests (:data:`asyncwifi._protocol.Tag`)
    @property
    def what(self) -> Tag: ...

    #: the decoded page type (``models._pages.decode_page``'s ``type_``)
    @property
    def page_type(self) -> type[Any]: ...

    #: a record's UTC time as the server wrote it (None: the records carry none); read on
    #: the first record of a page and on its tail (an ``operator.attrgetter``: no frame)
    @property
    def record_time(self) -> operator.attrgetter[Any] | None: ...

    #: where every request of the scroll goes
    @property
    def path(self) -> str: ...

    #: the first request's query, without ``size`` (the stream sends the size in use)
    @property
    def params(self) -> Mapping[str, str]: ...

    #: the first request's page size
    @property
    def size(self) -> int: ...

    #: whether the query is in UTC order, so that a time is a safe restart point
    @property
    def ordered(self) -> bool: ...

    #: whether an expired scroll may be resumed (then :meth:`restart` answers)
    @property
    def resumable(self) -> bool: ...

    #: whether a page shorter than the size asked for proves the end
    @property
    def short_ends(self) -> bool: ...

    #: the size of a first page asked small (then the scroll restarts from its time cursor at
    #: ``size``) so that a consumer who stops early has not read a whole page; None: no
    @property
    def first(self) -> int | None: ...

    #: the page size of a re-scan (for it and what follows; None: the size in use): it reads
    #: again what was delivered in few requests, and its first page, when short, is the end
    @property
    def rescan_size(self) -> int | None: ...

    #: the object quota the requests count against (spec §8), if any
    @property
    def objects(self) -> str | None: ...

    def next(self, scroll_id: str) -> Mapping[str, str]:
        """The query of the request that continues the scroll ``scroll_id`` names."""
        ...

    def restart(self, since: str | None) -> Mapping[str, str] | None:
        """The query of a fresh scroll over what remains: from ``since`` (a UTC time the
        server wrote, inclusive) or from the start (None); None if it cannot resume."""
        ...

    def envelope(self, envelope: Any) -> tuple[int | None, str | None]:
        """What a page's envelope says: the total count (None: not reported) and the id of
        the scroll's next page (None: none)."""
        ...

    def smaller(self, refused: int) -> int | None:
        """The page size to ask for after the server refused ``refused`` (a 409) on a first
        request; None: the refusal stands."""
        ...

    def accepted(self, size: int) -> None:
        """Told the page size the server accepted for the first request (once a stream)."""
        ...

    def timed(self, timed: bool) -> None:
        """Told, after a small first page, whether its records carry a time to restart
        from (a stream without one read that page twice: the next ones start full)."""
        ...
