"""One ``asyncwifi sync`` at a time per organization and database: its lease, kept alive.

Two syncs of one organization into one database would each spend the key's quota on the
same records. A sync claims the organization's lease (``sync_leases``, the fleet's fencing
token) before it reads anything: held by another holder stamped less than ``ttl`` ago,
the claim is refused (:class:`LeaseHeldError`: who, and until when) or, with ``wait``,
waited for. The holder stamps it every ``ttl / 3`` while it runs (:meth:`LeaseKeeper.keep`)
and releases it when it ends; a holder killed without a word stops stamping, and its lease
can be taken over ``ttl`` after its last stamp. Taken over (the fleet's ``take_lease``, or
a claim after a stall longer than ``ttl``), the old holder's writes are refused by the
fence (``LeaseLostError``) and its keeper says so.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from asyncwifi._instant import format_instant
from asyncwifi.errors import AsyncWifiError
from asyncwifi.sync._destination import (
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
)

__all__ = ["LEASE_TTL", "LeaseHeldError", "LeaseKeeper", "this_process"]

log = logging.getLogger("asyncwifi.sync")

#: real seconds a lease lasts after its holder's last stamp
LEASE_TTL = 60.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def this_process() -> str:
    """The holder this process claims as: host and process id (what an operator needs to
    find it)."""
    return f"asyncwifi sync pid {os.getpid()} on {socket.gethostname()}"


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
            now = datetime.now(UTC)
            token = await self.destination.claim_lease(
                self.holder, now - timedelta(seconds=self.ttl)
            )
            if token is not None:
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

    async def keep(self, on_lost: Callable[[LeaseLostError], None]) -> None:
        """Stamp the lease every ``ttl / 3`` until cancelled; taken over: ``on_lost`` and
        the end. An unreachable database skips a stamp (the sync is waiting for it too)."""
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
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
        if self.destination.lease is None or self.lost is not None:
            return
        try:
            await self.destination.stamp_lease(_EPOCH)
        except DestinationUnavailableError as exc:
            log.warning("sync: the lease could not be released (%s); it expires", exc)
