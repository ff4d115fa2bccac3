"""The dlt source's deletes: the hotspots deleted upstream (spec §4.3's ``deleted=true``
list, the tombstones the sync reads too) loaded as rows whose ``deleted`` column a merge
destination acts on: dlt's ``hard_delete`` hint drops the row (``deletes="hard"``), or the
row stays with ``deleted`` true (``"soft"``, the sync's ``--on-delete soft``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from dlt.common.schema.typing import TColumnSchema

from asyncwifi._client import Client
from asyncwifi.engine import HOTSPOTS_CHANGED, Batch, hotspot_tombstones, snapshot
from asyncwifi.errors import ValidationError

__all__ = ["DELETED", "DELETES", "Deletes", "deleted_column", "deletes_mode", "hotspots", "mark"]

log = logging.getLogger("asyncwifi.dlt")

Deletes = Literal["hard", "soft"]

#: the choices of ``asyncwifi_source(deletes=)``; soft is the sync's default (``--on-delete``)
DELETES: tuple[Deletes, ...] = ("soft", "hard")

#: the column that marks a deleted row: the hotspot record's own ``deleted``
DELETED = "deleted"

#: the hotspots resource's state: the clock time of its last read (the checkpoint), and
#: False under this key once the server was seen not keeping to the tombstones' filters
TOMBSTONES = "tombstones"


def deletes_mode(value: object) -> Deletes:
    """``"hard"`` or ``"soft"``, else ``ValidationError`` (before any request)."""
    for mode in DELETES:
        if value == mode:
            return mode
    raise ValidationError(f"deletes must be 'soft' or 'hard', got {value!r}")


def deleted_column(mode: Deletes) -> dict[str, TColumnSchema]:
    """The ``deleted`` column's hints: a boolean, and dlt's ``hard_delete`` for ``"hard"``
    (a merge then deletes the row of a record whose ``deleted`` is true, and inserts none)."""
    hint: TColumnSchema = {"data_type": "bool"}
    if mode == "hard":
        hint["hard_delete"] = True
    return {DELETED: hint}


def mark(batch: Batch[Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of :func:`hotspots`' batches with ``deleted`` set: false for the live list
    (the ``complete`` batch), true for the tombstones (the other)."""
    for row in rows:
        row[DELETED] = not batch.complete
    return rows


async def hotspots(
    api: Client, state: dict[str, Any], *, param: str = HOTSPOTS_CHANGED
) -> AsyncIterator[Batch[Any]]:
    """The hotspots deleted since the last run (none on the first: the table is empty),
    then the live list, whole; the checkpoint is the clock time before both reads. A server
    that answers the tombstones' filters with live or older hotspots is said once, and not
    asked again: deletions then stay in the destination (see ``docs/guides/dlt.md``)."""
    now = api.clock.now()
    since = state.get("checkpoint")
    if since is not None and state.get(TOMBSTONES) is not False:
        gone, kept = await hotspot_tombstones(api, since=float(since), param=param)
        if kept:
            yield gone
        else:
            log.warning(
                "dlt: the server does not keep to the hotspots' deleted=true filter: hotspots "
                "deleted upstream stay in the destination (a full reload removes them)"
            )
            state[TOMBSTONES] = False
    live = await snapshot(api, "hotspots")
    live.checkpoint = repr(now)
    yield live
