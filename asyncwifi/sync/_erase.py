"""Erasing contacts (issue 41): upstream, then from every mirror, for good.

:func:`erase_contacts` checks the ids (before any request), deletes each contact upstream
(``DELETE /v1/customers/{cid}``, spec §4.2: one request through the limiter, counted; a
contact already gone, a 404, is erased from the mirrors all the same), then erases the
deleted ones from each destination in one transaction
(:meth:`~asyncwifi.engine.Destination.erase`): the row, its events and dead letters
purged, and a suppression recorded that every later write honours, so no reconcile,
lookback or other writer brings the contact back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from asyncwifi._client import Client
from asyncwifi.engine import Destination, Erased, Suppression, check_cids
from asyncwifi.errors import AsyncWifiError, NotFoundError

__all__ = ["Erasure", "erase_contacts"]


@dataclass
class Erasure:
    """What :func:`erase_contacts` did: each id's fate upstream (``deleted``, ``gone``: not
    found, or the error that kept it), and what each destination removed."""

    upstream: dict[str, str] = field(default_factory=dict)
    destinations: list[tuple[Destination, Erased]] = field(default_factory=list)

    @property
    def failed(self) -> dict[str, str]:
        """The ids not deleted upstream (not erased from the mirrors either), and why."""
        return {c: why for c, why in self.upstream.items() if why not in ("deleted", "gone")}


async def erase_contacts(
    api: Client,
    cids: Iterable[str],
    destinations: Sequence[Destination],
    *,
    suppression: Suppression | None = None,
) -> Erasure:
    """Erase ``cids`` upstream and from ``destinations`` (opened here, not closed): see
    the module docstring. ``suppression``: how the suppressions are hashed (default: the
    environment's PII key, else SHA-256). A contact whose upstream delete failed is left
    in the mirrors (:attr:`Erasure.failed`): the caller says so."""
    wanted = check_cids(cids)
    for destination in destinations:
        destination.adopt(api.organization)
        await destination.open()  # a database that cannot be reached: before any delete
        await destination.erase([], suppression)  # suppressions of another key: refused
    done = Erasure()
    for cid in wanted:
        try:
            await api.contacts.delete(cid)
        except NotFoundError:
            done.upstream[cid] = "gone"
        except AsyncWifiError as exc:
            done.upstream[cid] = f"{type(exc).__name__}: {exc}"
        else:
            done.upstream[cid] = "deleted"
    erased = [cid for cid in wanted if cid not in done.failed]
    if erased:
        for destination in destinations:
            done.destinations.append((destination, await destination.erase(erased, suppression)))
    return done
