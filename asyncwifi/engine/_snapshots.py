"""Contacts, hotspots and segments as batches with checkpoints (events: ``_feeds``).

- :class:`ContactFeed` gives the contacts modified since a checkpoint (the vendor's
  modified-date filters and ``modified_absolute`` sort, names configurable) and full scans
  (for a server without those filters, and for the reconcile that finds deleted contacts).
- :func:`snapshot` reads hotspots or segments whole, for a refresh and its reconcile;
  :func:`changed_hotspots` reads the hotspots changed since a day (spec §4.3's "date greater
  than" filter, read as "changed since"), which costs the changes' objects, not the list's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from asyncwifi._client import Client
from asyncwifi._cursor import TimeCursor
from asyncwifi._defaults import HOTSPOTS_CHANGED as _HOTSPOTS_CHANGED
from asyncwifi._defaults import MODIFIED_FROM as _MODIFIED_FROM
from asyncwifi._defaults import MODIFIED_TO as _MODIFIED_TO
from asyncwifi._instant import floor_ms, utc_time
from asyncwifi._resources import PageSize
from asyncwifi._resources import page_size as checked_page_size
from asyncwifi._stream import RAW
from asyncwifi.engine._budget import Allowance
from asyncwifi.engine._feeds import BadRecord, Batch, _aware
from asyncwifi.errors import ScrollExpiredError, ValidationError
from asyncwifi.models import Contact, record_id

__all__ = [
    "HOTSPOTS_CHANGED",
    "MODIFIED_FROM",
    "MODIFIED_TO",
    "ContactFeed",
    "changed_hotspots",
    "deleted_hotspots",
    "hotspot_tombstones",
    "snapshot",
]

log = logging.getLogger("asyncwifi.sync")

#: the vendor's modified-date filters exist but their names are not shown: ours, by default
MODIFIED_FROM = _MODIFIED_FROM
MODIFIED_TO = _MODIFIED_TO
#: spec §4.3: "date greater than (YYYY-MM-DD)", its name not shown (ours: ``dateGt``), read as
#: "changed since" (an assumption: a server whose ``date`` is the creation date finds new
#: hotspots with it, and edits only at the hotspots' reconcile)
HOTSPOTS_CHANGED = _HOTSPOTS_CHANGED


class ContactFeed:
    """Contacts changed since a checkpoint, and full scans (see the module docstring).

    ``modified_from`` / ``modified_to`` are the query names of the modified-date filters
    (not shown in the reference: ``modifiedFrom``/``modifiedTo`` by default) and
    ``sort_by`` the sort that orders by modification (``modified_absolute``). If the server
    turns out to ignore the filter (a contact older than the checkpoint comes back),
    ``incremental`` becomes False: use :meth:`scan` and compare with what is stored.
    Pages are as large as the server accepts (``contacts.list(size="max")``, learnt once
    per client: a pass pays for a refused size once).
    """

    resource = "contacts"

    def __init__(
        self,
        api: Client,
        *,
        checkpoint: str | None = None,
        modified_from: str = MODIFIED_FROM,
        modified_to: str = MODIFIED_TO,
        sort_by: str = "modified_absolute",
        budget: Allowance | None = None,
        page_size: PageSize = "max",
        list_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.api = api
        #: the page size asked (``"max"``: the largest the server accepts, learnt)
        self.page_size = checked_page_size(page_size, "page_size")
        #: more keyword arguments of ``contacts.list`` (``has_email``, ``prefetch``)
        self.list_options = dict(list_options or {})
        self.checkpoint = checkpoint
        self.modified_from = modified_from
        self.modified_to = modified_to
        self.sort_by = sort_by
        self.budget = budget
        self.incremental = True
        self.requests = 0

    async def changes(self, until: datetime | None = None) -> AsyncIterator[Batch[Contact]]:
        """Contacts modified since the checkpoint (all of them on the first run), up to
        ``until`` (inclusive): then the checkpoint moves to ``until``, so that the next read
        starts after the last contact instead of reading it again (spec §8: a record read
        again is an object spent again)."""
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        cursor = TimeCursor.start("contacts", self.checkpoint, epoch)
        params: dict[str, object] = {self.modified_from: cursor.at}
        if until is not None:
            params[self.modified_to] = _aware(until, "until")
        start = cursor.at
        timed = True

        def keep(contact: Contact) -> bool:
            nonlocal timed
            when = utc_time(contact.modified)
            if when is not None and floor_ms(when) == start and contact.cid in carried:
                return False  # delivered before, unchanged since (a later change moves it)
            if when is None or floor_ms(when) < start:
                if self.incremental:
                    log.warning(
                        "sync: the server ignores the %s filter (or sends contacts without "
                        "a modified time): falling back to full scans",
                        self.modified_from,
                    )
                self.incremental = timed = False
                return True
            if timed and contact.cid is not None:
                cursor.add(contact.cid, when)
            return True

        carried = cursor.skip
        async for batch in self._stream(sort_by=self.sort_by, extra_params=params, keep=keep):
            batch.checkpoint = cursor.encode() if timed else self.checkpoint
            yield batch
        if timed and until is not None:
            cursor.complete(floor_ms(until))
            yield Batch("contacts", [], [], [], cursor.encode())
        self.checkpoint = cursor.encode() if timed else self.checkpoint

    async def scan(self) -> AsyncIterator[Batch[Contact]]:
        """Every contact; the last batch is ``complete`` with every id found."""
        async for batch in self._stream(sort_by="created_absolute", extra_params=None):
            yield batch

    async def _stream(
        self,
        *,
        sort_by: str,
        extra_params: dict[str, object] | None,
        keep: Callable[[Contact], bool] | None = None,
    ) -> AsyncIterator[Batch[Contact]]:
        if self.budget is not None:
            await self.budget.wait(self.resource, 2)
        # resume=False: the stream compares what it delivered with totalCount, and does not
        # count records that did not decode; a resume would re-scan for them forever. A
        # shortfall that the bad records explain is the end; any other lapse is raised
        stream = self.api.contacts.list(
            size=self.page_size,
            sort_by=sort_by,
            extra_params=extra_params,
            **{"options": RAW, **self.list_options},
        )
        seen: set[str] = set()
        counted = bad_total = 0
        try:
            async with stream:
                async for page in stream.pages():
                    items: list[Contact] = []
                    raws: list[Any] = []
                    bad = [BadRecord.of(e) for e in page.errors]
                    for item, raw in zip(page.items, page.raw_items or (), strict=True):
                        cid = record_id(item)
                        if cid is None:
                            bad.append(
                                BadRecord(bytes(raw), "a contact with no cid", record_id(item, raw))
                            )
                            continue
                        seen.add(cid)
                        if keep is None or keep(item):
                            items.append(item)
                            raws.append(raw)
                    seen.update(b.id for b in bad)
                    bad_total += len(page.errors)
                    new, counted = stream.requests - counted, stream.requests
                    self._count(new)
                    yield Batch("contacts", items, raws, bad, requests=new)
        except ScrollExpiredError as exc:
            if exc.total is None or exc.delivered + bad_total < exc.total:
                raise
        new = stream.requests - counted
        self._count(new)
        if keep is None:  # a full scan: what it did not find was deleted upstream
            yield Batch("contacts", [], [], [], complete=True, seen=frozenset(seen), requests=new)
        elif new:
            yield Batch("contacts", [], [], [], requests=new)

    def _count(self, requests: int) -> None:
        self.requests += requests


async def snapshot(
    api: Client,
    resource: Literal["hotspots", "segments"],
    *,
    budget: Allowance | None = None,
) -> Batch[Any]:
    """Every live hotspot (``deleted: false``) or segment, in one ``complete`` batch."""
    if budget is not None:
        await budget.wait(resource, 1)
    if resource == "hotspots":
        page: Any = await api.hotspots.page(deleted=False, keep_raw=True)
    elif resource == "segments":
        page = await api.segments.page(keep_raw=True)
    else:
        raise ValidationError(f"no snapshot of {resource!r}: hotspots or segments")
    return _whole(resource, page, complete=True)


async def changed_hotspots(
    api: Client, *, since: float, param: str = HOTSPOTS_CHANGED, budget: Allowance | None = None
) -> tuple[Batch[Any], bool]:
    """The live hotspots dated on or after the UTC day of clock time ``since`` (the list's
    date filter ``param``, read as "changed since"), in one batch (not ``complete``: it
    finds no deletes); and whether the server kept to the filter (a hotspot dated before
    that day says it did not: then every refresh should read the whole list)."""
    if budget is not None:
        await budget.wait("hotspots", 1)
    after = (datetime.fromtimestamp(since, UTC) - timedelta(days=1)).date().isoformat()
    page = await api.hotspots.page(deleted=False, keep_raw=True, extra_params={param: after})
    kept = all(h.date is None or str(h.date)[:10] > after for h in page.items)
    return _whole("hotspots", page, complete=False), kept


async def deleted_hotspots(
    api: Client, *, since: float, param: str = HOTSPOTS_CHANGED, budget: Allowance | None = None
) -> tuple[frozenset[str], int, bool]:
    """The ids of the hotspots deleted on or after the UTC day of ``since`` (spec §4.3's
    ``deleted`` filter, the tombstones, with the list's date filter ``param``), the
    requests spent, and whether the server kept to both filters (a live hotspot, or one
    dated before that day, says it did not: then the ids are not to be trusted)."""
    batch, kept = await hotspot_tombstones(api, since=since, param=param, budget=budget)
    ids = frozenset(i for h in batch.items if (i := record_id(h)) is not None)
    return ids, 1, kept


async def hotspot_tombstones(
    api: Client, *, since: float, param: str = HOTSPOTS_CHANGED, budget: Allowance | None = None
) -> tuple[Batch[Any], bool]:
    """:func:`deleted_hotspots` whole: the deleted hotspots' records (``deleted: true``) in
    one batch (not ``complete``), for a consumer that loads them (the dlt source's
    tombstone rows), and whether the server kept to both filters."""
    if budget is not None:
        await budget.wait("hotspots", 1)
    after = (datetime.fromtimestamp(since, UTC) - timedelta(days=1)).date().isoformat()
    page = await api.hotspots.page(deleted=True, keep_raw=True, extra_params={param: after})
    kept = all(
        h.deleted is True and (h.date is None or str(h.date)[:10] > after) for h in page.items
    )
    return _whole("hotspots", page, complete=False), kept


def _whole(resource: str, page: Any, *, complete: bool) -> Batch[Any]:
    """A page of hotspots or segments as one batch: a record with no id set aside; with
    ``complete``, every id found (``seen``: what the database holds beyond was deleted)."""
    items: list[Any] = []
    raws: list[Any] = []
    bad = [BadRecord.of(e) for e in page.errors]
    seen = {b.id for b in bad}
    for item, raw in zip(page.items, page.raw_items or [], strict=True):
        ident = record_id(item)
        if ident is None:
            bad.append(BadRecord(bytes(raw), f"a {resource[:-1]} with no id", record_id(item, raw)))
        else:
            items.append(item)
            raws.append(raw)
            seen.add(ident)
    return Batch(
        resource, items, raws, bad, complete=complete, seen=frozenset(seen) if complete else None,
        requests=1,
    )  # fmt: skip
