"""One ``asyncwifi sync`` at a time per organization and database: its lease, kept alive.

Two syncs of one organization into one database would each spend the key's quota on the
same records. A sync claims the organization's lease (``sync_leases``, the fleet's fencing
token) before it reads anything: held by another holder stamped less than ``ttl`` ago,
the claim is refused (:class:`LeaseHeldError`: who, and until when) or, with ``wait``,
waited for. The holder stamps it every ``ttl / 3`` while it runs (:meth:`LeaseKeeper.keep`)
and releases it when it ends. Taken over (the fleet's ``take_lease``, or a claim after a
stall longer than ``ttl``), the old holder's writes are refused by the fence
(``LeaseLostError``) and its keeper says so.

A lease whose holder is dead does not outlive it: every sync also holds a lock that dies
with it (``Destination.hold_organization``: a file lock beside a SQLite database, a
PostgreSQL session lock). A claim that gets that lock knows the syncs that held it are
gone, and takes a lease stamped by one of them at once (a daemon killed with ``kill -9``
and restarted by its service manager starts at once, not ``ttl`` later): the holder named
in the lease is a sync (:func:`this_process`), and, when it ran on this host, its process
is gone too; one on another host is judged so only by a lock that holds across hosts (the
database's). A holder alive on another host, or not a sync, keeps its lease.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from asyncwifi._defaults import LEASE_TTL as _LEASE_TTL
from asyncwifi._instant import format_instant
from asyncwifi.engine._destination import (
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
)
from asyncwifi.errors import AsyncWifiError

__all__ = ["LEASE_TTL", "LeaseHeldError", "LeaseKeeper", "this_process"]

log = logging.getLogger("asyncwifi.sync")

#: real seconds a lease lasts after its holder's last stamp
LEASE_TTL = _LEASE_TTL
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def this_process() -> str:
    """The holder this process claims as: host and process id (what an operator needs to
    find it)."""
    return f"asyncwifi sync pid {os.getpid()} on {socket.gethostname()}"


_SYNC_HOLDER = re.compile(r"asyncwifi sync pid (\d+) on (.+)")


def _gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it runs, as another user
    return False


class LeaseHeldError(AsyncWifiError):
    """Another sync holds the organization's lease (``holder``, until ``until``)."""

    def __init__(self, organization: str, holder: str, until: datetime) -> None:
        self.organization = organization
        self.holder = holder
        self.until = until
        super().__init__(
            f"organization {organization!r} is already synced into this database by "
            f"{holder} (its lease holds until {format_instant(until, 'seconds')}, renewed "
            "while it runs)"
        )


class LeaseKeeper:
    """Claims, keeps and releases ``destination``'s organization's lease (module
    docstring); ``ttl`` in real seconds."""

    def __init__(
        self, destination: Destination, *, holder: str | None = None, ttl: float = LEASE_TTL
    ) -> None:
        self.destination = destination
        self.holder = holder or this_process()
        self.ttl = ttl
        #: set once the lease was taken over (the keeper stopped stamping it)
        self.lost: LeaseLostError | None = None

    async def claim(
        self, *, wait: bool = False, on_wait: Callable[[LeaseHeldError], None] | None = None
    ) -> int:
        """Take the lease: its token. Held by another: ``LeaseHeldError``, or with ``wait``
        ``on_wait(error)`` once and a wait until it is free (cancel to stop waiting)."""
        said = False
        while True:
            cutoff = datetime.now(UTC) - timedelta(seconds=self.ttl)
            dead = await self._dead_holder(cutoff)
            token = await self.destination.claim_lease(self.holder, cutoff, dead=dead)
            if token is not None:
                if dead is not None:
                    log.warning("sync: %s is gone; its lease is taken over at once", dead)
                return token
            held = await self.destination.lease_holder()
            if held is None:
                continue  # released between the two statements
            holder, stamped = held
            error = LeaseHeldError(
                self.destination.organization, holder, stamped + timedelta(seconds=self.ttl)
            )
            if not wait:
                raise error
            if not said and on_wait is not None:
                on_wait(error)
            said = True
            left = (error.until - datetime.now(UTC)).total_seconds()
            await asyncio.sleep(min(max(left, 0.0) + 0.05, self.ttl / 3))

    async def _dead_holder(self, cutoff: datetime) -> str | None:
        """The lease's holder when it is known dead (module docstring), else None (and
        when its lease was released, or expired at ``cutoff``: free anyway)."""
        if not await self.destination.hold_organization():
            return None  # another sync that holds the lock runs (or no such lock)
        held = await self.destination.lease_holder()
        if held is None or held[0] == self.holder or held[1] < cutoff:
            return None
        found = _SYNC_HOLDER.fullmatch(held[0])
        if found is None:
            return None  # not an ``asyncwifi sync`` (a fleet worker): its stamps say
        if found.group(2) == socket.gethostname():
            return held[0] if _gone(int(found.group(1))) else None
        return held[0] if self.destination.holds_across_hosts else None

    async def keep(self, on_lost: Callable[[LeaseLostError], None]) -> None:
        """Stamp the lease every ``ttl / 3`` until cancelled; taken over: ``on_lost`` and
        the end. An unreachable database skips a stamp (the sync is waiting for it too)."""
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                # the lock too: taken again if its connection was lost, or first taken now
                # that a sync which held it when this one claimed by expiry has ended
                await self.destination.hold_organization()
                kept = await self.destination.stamp_lease(datetime.now(UTC))
            except DestinationUnavailableError:
                continue
            if not kept:
                token = self.destination.lease or 0
                self.lost = LeaseLostError(self.destination.organization, token, None)
                on_lost(self.lost)
                return

    async def release(self) -> None:
        """Let the next sync take the lease at once (nothing if it was taken over or the
        database is gone: it expires)."""
        try:
            if self.destination.lease is None or self.lost is not None:
                return
            try:
                await self.destination.stamp_lease(_EPOCH)
            except DestinationUnavailableError as exc:
                # the lock below goes anyway: the next sync sees this one gone at once
                log.info("sync: the lease could not be released (%s); it expires", exc)
        finally:
            await self.destination.release_organization()
