"""The PII policy (issue 41): per field ``keep``, ``drop`` or ``hash``, applied to a record
before it lands (typed columns and ``raw``, events, dead letters).

``hash`` is HMAC-SHA256 under the operator's key (``ASYNCWIFI_PII_KEY``, or a file): the
same value gives the same hash in every run and organization (they join), and a dictionary
of emails does not reverse it without the key. The key is never stored in the mirror,
never shown. Emails are hashed lower-cased and stripped (one person, one hash). A scrubbed
``raw`` is re-encoded JSON: no longer the server's exact bytes.

Fields (and the record keys they cover, anywhere in a record, events' ``email.email`` and
``sms.phone`` included): ``email`` (``email``; ``username`` when it holds an email),
``phone`` (``phone``, ``phoneNumber``), ``first_name``, ``last_name`` (``name``: both;
webhooks' ``firstname``, ``lastname``), ``birth_date`` (``birthDate``, ``birthDay``,
webhooks' ``birthday``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from asyncwifi.errors import ValidationError

__all__ = ["PII_FIELDS", "PII_KEY_ENV", "PiiPolicy", "key_id", "pii_key"]

Action = Literal["keep", "drop", "hash"]
PII_KEY_ENV = "ASYNCWIFI_PII_KEY"
#: the policy's fields and the record keys each covers
PII_FIELDS: dict[str, tuple[str, ...]] = {
    "email": ("email", "username"),
    "phone": ("phone", "phoneNumber"),
    "first_name": ("firstName", "firstname"),
    "last_name": ("lastName", "lastname"),
    "birth_date": ("birthDate", "birthDay", "birthday"),
}
#: names that stand for several fields
_ALIASES = {"name": ("first_name", "last_name")}
#: the typed columns that hold a field
_COLUMNS = {"email": "email", "phone": "phone", "first_name": "first_name",
            "last_name": "last_name"}  # fmt: skip
_WITHHELD = b'{"withheld":"a record that is not JSON, withheld by the PII policy"}'


@dataclass(frozen=True)
class PiiPolicy:
    """What to do with each field (absent: ``keep``) and the key of ``hash`` (see the
    module docstring). :meth:`parse` reads ``email=hash,phone=hash,name=drop``."""

    actions: Mapping[str, Action] = field(default_factory=dict)
    key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name, action in self.actions.items():
            if name not in PII_FIELDS:
                known = ", ".join([*PII_FIELDS, *_ALIASES])
                raise ValidationError(f"pii: unknown field {name!r} (known: {known})")
            if action not in ("keep", "drop", "hash"):
                raise ValidationError(f"pii: {name}: keep, drop or hash, got {action!r}")
        if "hash" in self.actions.values() and not self.key:
            raise ValidationError(
                f"pii: hash needs a key: set {PII_KEY_ENV} or give a key file (never stored "
                "in the mirror)"
            )

    @classmethod
    def parse(
        cls, text: str | Mapping[str, str] | None, *, key_file: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> PiiPolicy | None:  # fmt: skip
        """The policy of ``field=action,...`` (or a mapping; None: none), its key from
        ``key_file`` else ``ASYNCWIFI_PII_KEY``; a bad one is a ``ValidationError``."""
        if text is None:
            return None
        pairs: dict[str, str] = {}
        items = text.items() if isinstance(text, Mapping) else _pairs(text)
        for name, action in items:
            for one in _ALIASES.get(name.strip(), (name.strip(),)):
                pairs[one] = str(action).strip()
        return cls(pairs, pii_key(key_file, environ))  # type: ignore[arg-type]

    def __bool__(self) -> bool:
        return any(a != "keep" for a in self.actions.values())

    def describe(self) -> str | None:
        """The policy as a state file records it (None: none): its actions, and for
        ``hash`` which key (:func:`key_id`, never the key); a resume under another policy
        would mix two kinds of lines in one output."""
        said = ",".join(f"{n}={a}" for n, a in sorted(self.actions.items()) if a != "keep")
        if "hash" in self.actions.values() and self.key:
            said += f" (key {key_id(self.key)})"
        return said or None

    def _hash(self, value: str, name: str) -> str:
        assert self.key is not None
        text = value.strip().lower() if name == "email" else value.strip()
        return hmac.new(self.key, text.encode(), hashlib.sha256).hexdigest()

    def value(self, name: str, value: Any) -> Any:
        """``value`` of field ``name`` under the policy."""
        action = self.actions.get(name, "keep")
        if action == "keep" or value is None:
            return value
        if action == "drop":
            return None
        return self._hash(str(value), name)

    def _walk(self, node: Any, keys: Mapping[str, str]) -> Any:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for k, v in node.items():
                name = keys.get(k)
                if name is None or isinstance(v, dict | list):
                    out[k] = self._walk(v, keys)
                elif k == "username" and not (isinstance(v, str) and "@" in v):
                    out[k] = v  # a user name that is not an email
                else:
                    out[k] = self.value(name, v)
            return out
        if isinstance(node, list):
            return [self._walk(v, keys) for v in node]
        return node

    def record(self, record: Any) -> Any:
        """A decoded record (a dict) under the policy."""
        keys = {k: n for n, ks in PII_FIELDS.items() for k in ks if n in self.actions}
        return self._walk(record, keys)

    def scrub(self, raw: bytes | str) -> bytes:
        """A record's bytes under the policy (re-encoded JSON; one that is not JSON is
        withheld whole: it cannot be scrubbed)."""
        try:
            record = json.loads(raw)
        except ValueError:
            return _WITHHELD
        return json.dumps(self.record(record), separators=(",", ":")).encode()

    def rows(self, names: Sequence[str], rows: list[Sequence[object]]) -> list[Sequence[object]]:
        """A table's rows (columns ``names``) under the policy: typed columns and ``raw``."""
        raw_at = names.index("raw")
        typed = [
            (names.index(col), name)
            for name, col in _COLUMNS.items()
            if col in names and name in self.actions
        ]
        out: list[Sequence[object]] = []
        for row in rows:
            new = list(row)
            for at, name in typed:
                new[at] = self.value(name, new[at])
            new[raw_at] = str(self.scrub(str(new[raw_at])), "utf-8")
            out.append(new)
        return out


def key_id(key: bytes) -> str:
    """A key's fingerprint: tells keys apart without showing them (16 hex digits)."""
    return hmac.new(key, b"asyncwifi key id", hashlib.sha256).hexdigest()[:16]


def pii_key(
    key_file: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> bytes | None:
    """The operator's PII key: ``key_file``'s bytes (stripped), else ``ASYNCWIFI_PII_KEY``,
    else None; a file that cannot be read is a ``ValidationError``."""
    if key_file is not None:
        try:
            return Path(key_file).read_bytes().strip() or None
        except OSError as exc:
            raise ValidationError(f"pii: cannot read the key file: {exc.strerror}") from None
    env = os.environ if environ is None else environ
    return env.get(PII_KEY_ENV, "").encode() or None


def _pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for part in (p for p in text.split(",") if p.strip()):
        name, sep, action = part.partition("=")
        if not sep:
            raise ValidationError(f"pii: {part.strip()!r}: field=keep|drop|hash")
        pairs.append((name, action))
    if not pairs:
        raise ValidationError("pii: field=keep|drop|hash, comma-separated")
    return pairs
