"""What a sync destination does, whatever the database: one transaction per batch.

``Destination.write`` upserts a batch's rows, sets its bad records aside, marks deleted what a
complete snapshot no longer holds, and saves the checkpoints, all in one transaction: the
rows and the position can never disagree. An upsert changes a row only when its ``raw``
differs (or it was marked deleted), so replaying a batch writes nothing.
``DestinationUnavailableError`` means "the database cannot be reached now": the sync waits and
retries without asking the API for more data.

Every read and write is one organization's (``organization``); ``for_organization`` gives
another's on the same connections. ``take_lease`` fences: once taken, each write first
checks, in its transaction, that no one took the organization's lease since
(``LeaseLostError`` otherwise, and nothing of it is written).
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from asyncwifi.engine._feeds import BadRecord, Batch
from asyncwifi.engine._guard import DeleteGuard
from asyncwifi.engine._schema import NO_ORGANIZATION, TABLES
from asyncwifi.errors import AsyncWifiError, ConfigurationError
from asyncwifi.models import record_id

if TYPE_CHECKING:
    from asyncwifi.engine._erasure import Erased, Suppression

__all__ = [
    "Destination",
    "DestinationFullError",
    "DestinationNotWritableError",
    "DestinationPermissionError",
    "DestinationUnavailableError",
    "LeaseLostError",
    "StateMismatchError",
    "Write",
    "digest",
    "rows_of",
]


class DestinationUnavailableError(AsyncWifiError):
    """The database cannot be reached (down, restarting, refusing connections)."""


class DestinationFullError(DestinationUnavailableError):
    """The database's disk is full (``ENOSPC``, ``SQLITE_FULL``, PostgreSQL's ``disk_full``):
    an error, not an outage. A daemon waits for space (``SyncOptions.wait_for_space``); a
    single pass ends with it. ``path``: the file or database, named in the message."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class DestinationNotWritableError(ConfigurationError):
    """The destination cannot be written where it is: a read-only folder or file (a
    database, an export's output or its state file), a file size limit (``ulimit -f``), a
    disk that fails its writes. Waiting cannot help."""


class DestinationPermissionError(DestinationNotWritableError):
    """The database refuses this sync a right it needs (a PostgreSQL role without CREATE
    on the schema, or without rights on a table): the message names the role and the
    right."""


class StateMismatchError(AsyncWifiError):
    """A JSON Lines destination's state file and the job or its output disagree: the state
    belongs to another job (other range, types, output or options), or the output exists
    without one, or is shorter than what the state says was committed (someone else wrote
    or truncated it)."""


class LeaseLostError(AsyncWifiError):
    """Another holder took this organization's lease: this destination may not write any more
    (its batch was rolled back). Never retried: the newer holder syncs the organization."""

    def __init__(self, organization: str, token: int, current: int | None) -> None:
        self.organization = organization
        self.token = token
        self.current = current
        super().__init__(
            f"the sync lease of organization {organization!r} was taken over: this "
            f"destination holds token {token}, the database token {current}; nothing of "
            "the batch was written"
        )


@dataclass(slots=True)
class Write:
    """One transaction's worth: rows of one table, bad records, deletes, checkpoints."""

    table: str
    rows: list[Sequence[object]] = field(default_factory=list)
    bad: list[BadRecord] = field(default_factory=list)
    #: a complete snapshot's ids: live rows of ``table`` not among them are marked deleted
    seen: frozenset[str] | None = None
    checkpoints: dict[str, str] = field(default_factory=dict)
    #: the requests the batch cost (a destination that keeps its own count adds them)
    requests: int = 0
    #: ids the server says were deleted (tombstones): marked deleted, unguarded
    gone: frozenset[str] = frozenset()
    #: deletes remove the rows (``--on-delete purge``) instead of marking ``deleted_at``
    purge: bool = False

    def delete_sql(self, table: str, at: str, org: str, which: str) -> str:
        """The SQL of this write's deletes in ``table``: rows of organization ``org``
        (a placeholder) matching ``which``, marked deleted at ``at``, or purged."""
        if self.purge:
            return f"DELETE FROM {table} WHERE organization_id = {org} AND {which}"
        return (
            f"UPDATE {table} SET deleted_at = {at} WHERE organization_id = {org} "
            f"AND deleted_at IS NULL AND {which}"
        )

    #: the mass-delete guard of ``seen``'s deletes (None: unguarded; ``_guard``)
    guard: DeleteGuard | None = None
    #: set by the destination: the deletes the guard withheld (0: none), and whether a
    #: mass delete was applied (the guard allowed it)
    withheld: int = 0
    mass: bool = False

    def guarded(self, live: int, retiring: int) -> bool:
        """Whether to apply the deletes of ``retiring`` of ``live`` rows (the destination
        asks, inside its transaction); notes what the guard withheld or allowed."""
        guard = self.guard
        self.withheld, self.mass = 0, False
        if guard is None or not retiring:
            return True
        if guard.withholds(live, retiring):
            self.withheld = retiring
            return False
        self.mass = guard.is_mass(live, retiring)
        return True


def digest(raw: bytes) -> str:
    """The dead-letter key of a record: the same bad record is kept once."""
    return hashlib.sha256(raw).hexdigest()


def rows_of(batch: Batch[Any], synced_at: datetime | None = None) -> list[Sequence[object]]:
    """The rows of a batch's records, in the table's column order."""
    table = TABLES[batch.resource]
    now = synced_at or datetime.now(UTC)
    if batch.resource == "events" and batch.times is not None:
        return _event_rows(batch, now)
    values = table.values
    rows: list[Sequence[object]] = []
    for item, raw in zip(batch.items, batch.raws, strict=True):
        assert raw is not None  # the feeds always keep the bytes
        ident = record_id(item)
        assert ident is not None  # the feeds set a record with no id aside
        rows.append(values(item, ident, str(raw, "utf-8"), now))
    return rows


def _event_rows(batch: Batch[Any], now: datetime) -> list[Sequence[object]]:
    """``rows_of`` for events, written out: the hot loop of a sync into a database (same
    columns as ``TABLES["events"]``; the times the feed read are reused; tuples, built in
    one comprehension: half the cost of a loop of lists)."""
    assert batch.times is not None
    return [
        (
            ev.id,
            ev.type,
            when,
            ev.customer_id,
            None if (where := ev.where) is None else where.location_id,
            None if where is None else where.hotspot_id,
            str(raw, "utf-8"),  # the feeds keep the bytes (None would be a TypeError)
            now,
        )
        for ev, raw, when in zip(batch.items, batch.raws, batch.times, strict=True)
    ]


class Destination(abc.ABC):
    """A sync destination (see the module docstring).

    ``concurrency`` is how many event writes may be in flight at once (each on its own
    connection): their rows load side by side, and each commits only after the one before
    it (``write(..., after=...)``), so a checkpoint never passes rows not yet committed.
    """

    dialect: str
    concurrency: int = 1
    #: whose rows it reads and writes (a destination that keeps no organizations: "")
    organization: str = ""
    #: the fencing token of :meth:`take_lease`, or None (writes unchecked)
    lease: int | None = None
    #: how erased contacts are hashed (``_erasure``; None: under the environment's PII key,
    #: else SHA-256); every write checks its rows against the suppressions with it
    suppression: Suppression | None = None

    def suppressor(self) -> Suppression:
        """:attr:`suppression`, else the one of the environment's PII key."""
        from asyncwifi.engine._erasure import Suppression

        if self.suppression is None:
            self.suppression = Suppression.resolve()
        return self.suppression

    async def erase(self, cids: Sequence[str], suppression: Suppression | None = None) -> Erased:
        """Erase contacts ``cids`` in one transaction (``_erasure``): their rows, events
        and dead letters purged (their bytes zeroed in SQLite), a suppression recorded
        (hashed by ``suppression``, else :meth:`suppressor`) that every later write of any
        process honours. No ``cids``: only check that the mirror's suppressions are keyed
        as ``suppression`` is (``SuppressionKeyError`` otherwise)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no contacts to erase")

    async def retain(self, cutoff: datetime, by: str, letters: datetime) -> dict[str, int]:
        """Local retention (``_retention``): purge contacts whose activity (``by``:
        ``activity``, their last change; ``creation``) and events whose time are before
        ``cutoff``, and dead letters set aside before ``letters``; rows purged by table."""
        raise NotImplementedError(f"{type(self).__name__} has no retention")

    def adopt(self, organization: str | None) -> Destination:
        """This destination, for a client of ``organization`` (None: any): one opened for
        no organization takes it on; one of another organization, or holding a lease, is
        refused (``ConfigurationError``)."""
        if organization is None or self.organization == organization:
            return self
        if self.organization != NO_ORGANIZATION or self.lease is not None:
            raise ConfigurationError(
                f"the destination is organization {self.organization!r}'s (lease "
                f"{self.lease}), the client's organization is {organization!r}"
            )
        self.organization = organization
        return self

    def for_organization(self, organization: str) -> Destination:
        """A destination for ``organization`` on the same database and connections (closing
        it leaves them open). This default is for a destination that keeps no
        organizations (a JSON Lines export): itself."""
        return self

    async def take_lease(self, holder: str) -> int:
        """Take this organization's lease: its fencing token, one more than the last one
        taken, remembered in :attr:`lease`; a write of a destination holding an older one is
        refused from now on (``LeaseLostError``)."""
        raise NotImplementedError(f"{type(self).__name__} has no leases")

    async def claim_lease(
        self, holder: str, cutoff: datetime, *, dead: str | None = None
    ) -> int | None:
        """Take this organization's lease (as :meth:`take_lease`) unless another holder
        stamped it after ``cutoff`` (``dead``: a holder known dead, whose lease is taken
        whenever it stamped it): the token, or None (held; :meth:`lease_holder` says by
        whom). The ``asyncwifi sync`` command's one-sync-at-a-time (``_lease``)."""
        raise NotImplementedError(f"{type(self).__name__} has no leases")

    #: whether the lock of :meth:`hold_organization` tells about processes on every host
    #: (a database's session lock) or on this host only (a file lock)
    holds_across_hosts = False

    async def hold_organization(self) -> bool | None:
        """Lock this organization for as long as this process lives (a lock the OS or the
        database drops with its holder): True once held, False while another live process
        holds it, None when this destination has no such lock. Every ``asyncwifi sync``
        holds it: taken, it proves the syncs that held it before are gone (``_lease``)."""
        return None

    async def release_organization(self) -> None:  # noqa: B027 (none to let go by default)
        """Let go of :meth:`hold_organization`'s lock (``close`` does too)."""

    async def lease_holder(self) -> tuple[str, datetime] | None:
        """Who holds this organization's lease and when they last stamped it, or None."""
        raise NotImplementedError(f"{type(self).__name__} has no leases")

    async def stamp_lease(self, when: datetime) -> bool:
        """Stamp the lease this destination holds with ``when`` (a renewal, or the epoch:
        a release); False when another took it over."""
        raise NotImplementedError(f"{type(self).__name__} has no leases")

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and apply the migrations not applied yet."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Disconnect."""

    def rows(self, batch: Batch[Any]) -> list[Sequence[object]]:
        """The rows of a batch as this destination stores them (a table's columns)."""
        return rows_of(batch)

    @abc.abstractmethod
    async def checkpoint(self, name: str) -> str | None:
        """The stored checkpoint ``name``, or None."""

    @abc.abstractmethod
    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        """Apply ``write`` in one transaction; returns the rows it changed. With ``after``
        (the previous write), its rows may load first, but its checkpoints, deletes and
        dead letters are written, and it commits, only once ``after`` is done."""

    @abc.abstractmethod
    async def ids(self, table: str, *, deleted: bool = False) -> set[str]:
        """The ids of ``table`` (live ones, or those marked deleted)."""

    @abc.abstractmethod
    async def existing(self, table: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` ``table`` holds (deleted or not): a re-read of the recent
        past asks it for records that an earlier run may have stored."""

    @abc.abstractmethod
    async def count(self, table: str) -> int:
        """Live rows in ``table`` (not those marked deleted)."""

    @abc.abstractmethod
    async def schema_version(self) -> int:
        """The newest migration applied."""
