"""The hotspots' refresh between two whole reads (:meth:`Syncer.sync_hotspots` decides which
is due): those changed since the last refresh (the list's date filter), and those deleted
since (spec §4.3's ``deleted=true`` list), each filter trusted only while the server keeps
to it: one that it ignores is said once and not asked again (the whole read finds them)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from asyncwifi.engine import Write, changed_hotspots, deleted_hotspots

if TYPE_CHECKING:
    from asyncwifi.sync._runner import Syncer

__all__ = ["refresh_changed"]

log = logging.getLogger("asyncwifi.sync")


async def refresh_changed(syncer: Syncer, since: float, param: str, checkpoint: str) -> int:
    """The hotspots changed since ``since`` (and those deleted), applied under
    ``checkpoint``; the rows changed."""
    api, budget = syncer.api, syncer.budget
    measured = await syncer._measurements()
    now = api.clock.now()
    batch, kept = await syncer._unless_stopped(
        lambda: changed_hotspots(api, since=since, param=param, budget=budget)
    )
    if not kept:
        log.warning(
            "sync: the server ignores the hotspots' %s filter (older hotspots came back): "
            "each refresh reads the whole list from now on",
            param,
        )
        measured.hotspot_filter = False
    else:
        measured.hotspot_filter = True
        measured.add_hotspot_changes(len(batch.items), now - since)
    batch.checkpoint = repr(now)
    before = syncer._total()
    if kept and measured.hotspot_tombstones is not False:
        await _tombstones(syncer, since, param)  # before the checkpoint moves past them
    await syncer._apply(batch, checkpoint)
    await syncer._flush()
    return syncer._total() - before


async def _tombstones(syncer: Syncer, since: float, param: str) -> None:
    """The hotspots deleted since ``since``: marked deleted at once, not at the next whole
    read; a server that answers with live or older hotspots is not asked again."""
    api, budget = syncer.api, syncer.budget
    measured = await syncer._measurements()
    gone, requests, kept = await syncer._unless_stopped(
        lambda: deleted_hotspots(api, since=since, param=param, budget=budget)
    )
    stats = syncer.stats
    stats.requests["hotspots"] = stats.requests.get("hotspots", 0) + requests
    if not kept:
        log.warning(
            "sync: the server does not keep to the hotspots' deleted=true filter: deleted "
            "hotspots are found by the hotspots' whole read from now on"
        )
        measured.hotspot_tombstones = False
        return
    measured.hotspot_tombstones = True
    if gone:
        await syncer._write(Write("hotspots", gone=gone))
