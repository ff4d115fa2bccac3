"""What a page becomes in the output: its records named and chosen, then written and
committed with the other pages of its group (one fsync, one SQLite transaction)."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from asyncwifi.backfill._contract import Progress
from asyncwifi.backfill._records import Boundaries, PageSelection, drop, select_page
from asyncwifi.backfill._sink import JsonlOutput, RawRecord
from asyncwifi.backfill._state import PageCommit, SliceState, StateStore
from asyncwifi.models import ItemError

__all__ = ["Pending", "attributes", "commit_batch", "event_date", "with_undecoded"]


@dataclass(slots=True, eq=False)
class Pending:
    """A page waiting for the committer."""

    state: SliceState
    seen: set[str]
    boundaries: Boundaries
    ids: list[str]
    dates: list[Any] | None
    raws: Sequence[RawRecord]
    requests: int
    future: asyncio.Future[int] | None = None


def attributes(items: Sequence[Any], name: str) -> list[Any] | None:
    """``[item.<name> for item in items]`` in C, or ``None`` if an item lacks it."""
    try:
        return list(map(operator.attrgetter(name), items))
    except AttributeError:
        return None


def with_undecoded(
    items: Sequence[Any], raws: Sequence[RawRecord], errors: Sequence[ItemError]
) -> tuple[list[Any], list[RawRecord]]:
    """Put back, at their places, the records a page could not decode (``page.errors``).

    An export is lossless: such a record is still written from its raw bytes, and named as
    it would have been decoded (``ItemError.item``: its id read from its bytes, else a hash
    of them; see ``asyncwifi.models._identity``).
    """
    merged_items = list(items)
    merged_raws: list[RawRecord] = list(raws)
    for error in sorted(errors, key=operator.attrgetter("index")):
        at = min(error.index, len(merged_items))
        merged_items.insert(at, error.item)
        merged_raws.insert(at, error.raw)
    return merged_items, merged_raws


def event_date(item: Any) -> object:
    """An event's UTC time as the server wrote it (``Event.time_text``: ``when.createdAt``
    of the nested shape, or the legacy ``date``); ``None`` on the spec's flat records."""
    return getattr(item, "time_text", None)


def commit_batch(
    store: StateStore, sink: JsonlOutput, batch: Sequence[Pending], progress: Progress
) -> list[int]:
    """Write the pages, fsync once, commit them in one transaction (worker thread).

    spec-independent rule of the engine: the output is durable before the state says
    so; on any failure the file is cut back, so no later commit counts these bytes.
    """
    chosen_pages: list[PageSelection] = []
    chunks: list[bytes] = []
    near_written: set[str] = set()
    for item in batch:
        state = item.state
        chosen = select_page(
            item.ids,
            item.dates,
            item.raws,
            seen=item.seen,
            boundaries=item.boundaries,
            cursor=state.cursor,
            ordered=state.ordered,
        )
        if chosen.boundary_ids:
            # written by a neighbouring slice before, or earlier in this very batch
            already = store.seen_at_boundary(chosen.boundary_ids)
            already.update(i for i in chosen.boundary_ids if i in near_written)
            drop(chosen, already)
            near_written.update(chosen.boundary_ids)
        chosen_pages.append(chosen)
        if chosen.raws:
            chunks.append(sink.encode(chosen.raws))
    before = sink.offset
    try:
        offset = sink.append_many(chunks) if chunks else before
        store.commit_pages(
            offset=offset,
            pages=[
                PageCommit(
                    index=item.state.index,
                    ids=chosen.ids,
                    cursor=chosen.cursor,
                    ordered=chosen.ordered,
                    requests=item.requests,
                    boundary_ids=chosen.boundary_ids,
                )
                for item, chosen in zip(batch, chosen_pages, strict=True)
            ],
        )
    except BaseException:
        # disk full, a SQLite error...: these bytes must not be counted by a later
        # commit; the pages are fetched again by the next run
        sink.rollback(before)
        raise
    # only now, with the commit durable, are the pages part of their slices' past
    for item, chosen in zip(batch, chosen_pages, strict=True):
        state = item.state
        item.seen.update(chosen.ids)
        state.cursor = chosen.cursor
        state.ordered = chosen.ordered
        state.pages += 1
        state.records += len(chosen.ids)
        # counted with the commit: a worker cancelled while waiting for it still counts
        progress.duplicates_run += chosen.duplicates
        progress.records += len(chosen.ids)
        progress.records_run += len(chosen.ids)
        progress.pages_run += 1
        progress.requests_run += item.requests
        progress.requests_total += item.requests
    return [len(chosen.ids) for chosen in chosen_pages]
