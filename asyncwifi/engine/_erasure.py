"""Erasure and suppression (issue 41): a contact erased from the mirror stays out of it.

An erasure (:meth:`Destination.erase`) purges, in one transaction, the contact's row, its
events and its dead letters, and records a **suppression**: a keyed hash of the contact's
id (and of its email and phone as the mirror stored them) in ``sync_suppressions``. Every
later write consults that table inside its own transaction (:class:`Suppressed`): a row of
a suppressed contact (a contact re-read by a reconcile, an event re-read by the lookback,
a dead letter naming it) is **skipped**, never stored, not even scrubbed.

The hash (:class:`Suppression`) is HMAC-SHA256 under the operator's PII key
(``ASYNCWIFI_PII_KEY`` or a key file) when one is configured; without a key it is a plain
SHA-256, which anyone holding a candidate id can recompute (ids are not secret: a key is
the better choice). A suppression table keyed by one key is refused to a writer without
it (:class:`SuppressionKeyError`): it could not tell an erased contact from another, and
would write it back.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from asyncwifi.engine._pii import PII_FIELDS, PII_KEY_ENV, key_id, pii_key
from asyncwifi.errors import ConfigurationError, ValidationError

__all__ = [
    "SUPPRESSIONS",
    "Erased",
    "Suppressed",
    "Suppression",
    "SuppressionKeyError",
    "check_cids",
]

#: the table of suppressions (one row per organization and hash)
SUPPRESSIONS = "sync_suppressions"
#: what a suppression hash is taken over (apart from the PII policy's hashes of a field)
_DOMAIN = b"asyncwifi suppression\0"
#: the record keys whose values a write checks against the suppressions (besides ids)
_KEYS = frozenset({"customerId", "cid", *PII_FIELDS["email"], *PII_FIELDS["phone"]})
#: the longest contact id accepted (the platform's are 24 hex digits)
_CID_MAX = 200


class _Write(Protocol):
    """What :meth:`Suppressed.keep` filters: a ``Write``'s table, rows and dead letters."""

    table: str
    rows: list[Any]
    bad: list[Any]


class SuppressionKeyError(ConfigurationError):
    """The mirror's suppressions were keyed with a PII key this writer does not have."""


@dataclass(frozen=True)
class Suppression:
    """How a suppressed value is hashed: HMAC-SHA256 under ``key``, or SHA-256 without one
    (module docstring). ``key_id`` tells keys apart without showing them."""

    key: bytes | None = None

    def __repr__(self) -> str:
        return f"Suppression(method={self.method!r})"

    @classmethod
    def resolve(
        cls, key: bytes | None = None, *, key_file: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Suppression:  # fmt: skip
        """``key``, else the operator's PII key (``key_file``, else ``ASYNCWIFI_PII_KEY``:
        ``_pii.pii_key``), else none (plain SHA-256)."""
        return cls(key or pii_key(key_file, environ))

    @property
    def method(self) -> str:
        return "hmac-sha256" if self.key else "sha256"

    @property
    def key_id(self) -> str:
        return key_id(self.key) if self.key else ""

    def of(self, value: str) -> str:
        """The suppression hash of ``value``."""
        text = _DOMAIN + value.strip().encode()
        if self.key:
            return hmac.new(self.key, text, hashlib.sha256).hexdigest()
        return hashlib.sha256(text).hexdigest()


def check_cids(cids: Iterable[object]) -> list[str]:
    """Contact ids to erase, checked before any request: text, no spaces or control
    characters, no ``/``, at most 200 characters; in order, once each."""
    out: list[str] = []
    for cid in cids:
        if not isinstance(cid, str) or not cid or len(cid) > _CID_MAX:
            raise ValidationError(f"not a contact id: {cid!r} (1 to {_CID_MAX} characters)")
        if any(c.isspace() or not c.isprintable() or c == "/" for c in cid):
            raise ValidationError(f"not a contact id: {cid!r} (no spaces, controls or '/')")
        out.append(cid)
    if not out:
        raise ValidationError("give at least one contact id to erase")
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Erased:
    """What an erasure removed from one destination."""

    contacts: int = 0
    events: int = 0
    dead_letters: int = 0
    #: suppressions recorded (new ones; an id erased before is suppressed already)
    suppressions: int = 0


def suppression_rows(
    suppression: Suppression, stored: Mapping[str, tuple[object, ...]], cids: list[str]
) -> list[tuple[str, str, str, str]]:
    """The rows to record for ``cids`` (``stored``: each one's email and phone as the
    mirror holds them): ``(hash, kind, method, key_id)``."""
    out = []
    for cid in cids:
        values = [("cid", cid)]
        for kind, value in zip(("email", "phone"), stored.get(cid, ()), strict=False):
            if isinstance(value, str) and value.strip():
                values.append((kind, value))
        for kind, value in values:
            out.append((suppression.of(value), kind, suppression.method, suppression.key_id))
    return out


def needles(stored: Mapping[str, tuple[object, ...]], cids: list[str]) -> list[str]:
    """The values whose appearance in a record's bytes ties it to an erased contact: the
    ids, and the stored emails and phones."""
    found = list(cids)
    for values in stored.values():
        found += [v for v in values if isinstance(v, str) and len(v.strip()) >= 5]
    return list(dict.fromkeys(found))


class Suppressed:
    """One organization's suppressions as a write reads them in its transaction: rows of
    ``(hash, method, key_id)``; ``suppression`` hashes the write's values."""

    def __init__(self, entries: Iterable[tuple[str, str, str]], suppression: Suppression) -> None:
        self._by: dict[tuple[str, str], set[str]] = {}
        for digest, method, keyed in entries:
            self._by.setdefault((str(method), str(keyed)), set()).add(str(digest))
        plain = Suppression(None)
        self._hashers: list[tuple[Suppression, set[str]]] = []
        for (method, keyed), hashes in self._by.items():
            if method == "sha256":
                self._hashers.append((plain, hashes))
            elif suppression.key and keyed == suppression.key_id:
                self._hashers.append((suppression, hashes))
            else:
                raise SuppressionKeyError(
                    "the mirror holds erased contacts suppressed under a PII key this "
                    f"writer does not have: give it the same key ({PII_KEY_ENV} or "
                    "--pii-key-file), or it could write them back"
                )

    def __bool__(self) -> bool:
        return bool(self._by)

    def hit(self, value: object) -> bool:
        """Whether ``value`` is suppressed."""
        if not isinstance(value, str) or not value:
            return False
        return any(h.of(value) in hashes for h, hashes in self._hashers)

    def _mentions(self, raw: object, keys: frozenset[str] | None) -> bool:
        """Whether a record's JSON holds a suppressed value (under ``keys``; None: any
        string value)."""
        try:
            node = json.loads(raw if isinstance(raw, str | bytes) else str(raw))
        except ValueError:
            return False
        stack: list[Any] = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                for k, v in item.items():
                    if isinstance(v, dict | list):
                        stack.append(v)
                    elif (keys is None or k in keys) and self.hit(v):
                        return True
            elif isinstance(item, list):
                stack += item
            elif keys is None and self.hit(item):
                return True
        return False

    def keep(self, write: _Write, names: list[str]) -> int:
        """Drop from ``write`` (columns ``names``) the rows and dead letters of suppressed
        contacts; how many were dropped."""
        before = len(write.rows) + len(write.bad)
        if write.table == "contacts":
            write.rows = [r for r in write.rows if not self.hit(r[0])]
        elif write.table == "events":
            at, raw_at = names.index("customer_id"), names.index("raw")
            # an event names its contact by id; one without (a flat shape) by its fields
            write.rows = [
                r
                for r in write.rows
                if not (self.hit(r[at]) or (r[at] is None and self._mentions(r[raw_at], _KEYS)))
            ]
        write.bad = [b for b in write.bad if not self.hit(b.id) and not self._mentions(b.raw, None)]
        return before - len(write.rows) - len(write.bad)
