"""``fleet.toml``: the organizations of a fleet, their keys, and their settings.

::

    [fleet]                       # defaults of every organization
    base_url = "https://api.example.net"
    poll = "1m"                   # between passes (a duration, or seconds)
    request_share = 1.0           # share of each key's day of requests this fleet may use
    allowance = "10 access points"  # the month's objects (spec §8): a number or the terms
    object_share = 0.9            # share of that allowance the sync plans to spend
    # allow_http, settle, lookback, refresh_every, reconcile_every, since

    [[organizations]]
    organization = "org-a"
    client_key = "..."
    client_secret_env = "ORG_A_SECRET"   # or client_secret = "..." (a file others can't read)
    poll = "30s"                  # any default, overridden for this organization

Every default is the sync's (``asyncwifi._defaults``: ``asyncwifi sync`` and ``SyncOptions``
say the same); ``budget``, the old name of ``request_share``, is read for one release with
one deprecation line. A bad file is one :class:`~asyncwifi.errors.ConfigurationError` line
naming the organization and the field, never a value. Secrets are held in
:class:`~asyncwifi._auth.Secret`: they never show in a repr, and never leave the worker
(workflows carry organization ids and :meth:`Organization.public` settings only).
"""

from __future__ import annotations

import logging
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from asyncwifi._auth import Secret
from asyncwifi._client import plain_http_refusal
from asyncwifi._defaults import LOOKBACK, OBJECT_SHARE, POLL_INTERVAL, REQUEST_SHARE
from asyncwifi._protocol import is_share
from asyncwifi._settings import resolve_all
from asyncwifi.errors import ConfigurationError, ValidationError
from asyncwifi.ratelimit import ALL, KINDS, allowance_of

__all__ = ["FleetConfig", "Organization", "load_fleet_config", "parse_fleet_config"]

log = logging.getLogger("asyncwifi.fleet")

#: the settings a ``[fleet]`` table gives and an organization may override, with defaults
#: (durations in seconds; the table's, ``asyncwifi._defaults``)
_DEFAULTS: dict[str, Any] = {
    "base_url": None,
    "allow_http": False,
    "poll": POLL_INTERVAL,
    "request_share": REQUEST_SHARE,
    # None: the sync's object plan chooses (from the organization's allowance and share)
    "settle": None,
    "lookback": LOOKBACK,
    "refresh_every": None,
    "reconcile_every": None,
    "since": None,
    "allowance": None,
    "object_share": OBJECT_SHARE,
    # what is kept (issue 41; None: all four resources, every event type)
    "resources": None,
    "event_types": None,
    # the PII policy ("email=hash,name=drop"; its key: ASYNCWIFI_PII_KEY on the worker)
    "pii": None,
}
#: old names still read, for one release: old -> new
_RENAMED = {"budget": "request_share"}
_DURATIONS = ("poll", "settle", "lookback", "refresh_every", "reconcile_every")
_OWN = ("organization", "client_key", "client_secret", "client_secret_env")


@dataclass(frozen=True)
class Organization:
    """One organization of the fleet: who it is, its key, and how it is synced."""

    organization: str
    client_key: str
    base_url: str
    #: the secret itself, or None when it is read from ``client_secret_env`` (by the worker)
    client_secret: Secret | None = field(default=None, repr=False)
    client_secret_env: str | None = None
    allow_http: bool = False
    poll: float = POLL_INTERVAL
    #: the share of the key's day of requests (``asyncwifi sync --request-share``)
    request_share: float = REQUEST_SHARE
    #: None: chosen by the sync's object plan
    settle: float | None = None
    lookback: float = LOOKBACK
    refresh_every: float | None = None
    reconcile_every: float | None = None
    #: where a first run's events start (default: the sync's, 7 days back)
    since: datetime | None = None
    #: the month's object allowance per kind (``"all"``: every kind; spec §8), checked by
    #: the limiter's rule; None: not known (the client's ``Limits(month=...)``)
    allowance: Mapping[str, int] | None = field(default=None, hash=False)
    #: the share of that allowance the sync plans to spend (``SyncOptions.object_share``)
    object_share: float = OBJECT_SHARE

    @property
    def budget(self) -> float:
        """The old name of :attr:`request_share` (read for one release)."""
        return self.request_share

    #: what the sync keeps (``SyncOptions.resources``/``event_types``; None: everything)
    resources: tuple[str, ...] | None = None
    event_types: tuple[str, ...] | None = None
    #: the PII policy's text (``SyncOptions.pii``; the key from the worker's environment)
    pii: str | None = None

    def secret(self, environ: Mapping[str, str] | None = None) -> Secret:
        """The client secret: from the file, or from the worker's environment variable."""
        if self.client_secret is not None:
            return self.client_secret
        env = os.environ if environ is None else environ
        value = env.get(self.client_secret_env or "")
        if not value:
            raise ConfigurationError(
                f"organization {self.organization!r}: client_secret_env: the environment "
                f"variable {self.client_secret_env} is not set on this worker"
            )
        return Secret(value)


@dataclass(frozen=True)
class FleetConfig:
    """Every organization of a ``fleet.toml``, by id, in the file's order."""

    organizations: dict[str, Organization]
    path: Path | None = None

    def __getitem__(self, organization: str) -> Organization:
        try:
            return self.organizations[organization]
        except KeyError:
            raise ConfigurationError(
                f"organization {organization!r} is not in this worker's fleet configuration"
            ) from None

    def __len__(self) -> int:
        return len(self.organizations)

    def check_secrets(self, environ: Mapping[str, str] | None = None) -> None:
        """Raise for the first organization whose secret this process cannot read."""
        for org in self.organizations.values():
            org.secret(environ)


def load_fleet_config(path: Path) -> FleetConfig:
    """Read and check ``path`` (one ``ConfigurationError`` line for a bad file)."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:  # its message gives a position, not content
        raise ConfigurationError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read it: {exc.strerror}") from None
    return parse_fleet_config(data, path)


def parse_fleet_config(data: Mapping[str, Any], path: Path | None = None) -> FleetConfig:
    """Check a decoded ``fleet.toml`` and build its :class:`FleetConfig`."""
    where = f"{path}: " if path is not None else ""
    unknown = sorted(set(data) - {"fleet", "organizations"})
    if unknown:
        raise ConfigurationError(f"{where}unknown table {unknown[0]} (known: fleet, organizations)")
    table = data.get("fleet", {})
    if not isinstance(table, Mapping):
        raise ConfigurationError(f"{where}[fleet] must be a table")
    fleet = _settings(table, f"{where}[fleet]", allowed=set(_DEFAULTS))
    entries = data.get("organizations")
    if not isinstance(entries, list) or not entries:
        raise ConfigurationError(f"{where}no [[organizations]]: list at least one")
    organizations: dict[str, Organization] = {}
    for index, entry in enumerate(entries, 1):
        org = _organization(entry, index, fleet, where)
        if org.organization in organizations:
            raise ConfigurationError(
                f"{where}organization {org.organization!r}: organization: listed twice"
            )
        organizations[org.organization] = org
    return FleetConfig(organizations, path)


def _organization(entry: object, index: int, fleet: Mapping[str, Any], where: str) -> Organization:
    """An organization's entry, read over ``[fleet]`` (``fleet``) over the table's defaults:
    the one reading of settings (``asyncwifi._settings``; the entry is the most specific)."""
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{where}organization #{index}: must be a table")
    name = entry.get("organization")
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ConfigurationError(
            f"{where}organization #{index}: organization: a non-empty id without spaces"
        )
    label = f"{where}organization {name!r}"
    for key in ("client_key", "client_secret", "client_secret_env"):
        value = entry.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigurationError(f"{label}: {key}: must be a non-empty string")
    if not entry.get("client_key"):
        raise ConfigurationError(f"{label}: client_key: missing")
    has_secret, has_env = "client_secret" in entry, "client_secret_env" in entry
    if has_secret == has_env:
        raise ConfigurationError(
            f"{label}: client_secret: give either client_secret or client_secret_env"
        )
    own = _settings(
        {k: v for k, v in entry.items() if k not in _OWN}, label, allowed=set(_DEFAULTS)
    )
    settings = resolve_all(_DEFAULTS, arguments=own, file=fleet, defaults=_DEFAULTS)
    base_url = settings.pop("base_url")
    if not base_url:
        raise ConfigurationError(f"{label}: base_url: missing (here or in [fleet])")
    refusal = plain_http_refusal(base_url, settings["allow_http"], "set allow_http = true")
    if refusal is not None:
        raise ConfigurationError(f"{label}: base_url: {refusal}")
    secret = entry.get("client_secret")
    return Organization(
        organization=name,
        client_key=entry["client_key"],
        base_url=base_url,
        client_secret=None if secret is None else Secret(secret),
        client_secret_env=entry.get("client_secret_env"),
        **settings,
    )


def _settings(table: Mapping[str, Any], label: str, *, allowed: set[str]) -> dict[str, Any]:
    """The checked settings of a table: durations in seconds, shares in (0, 1]."""
    from asyncwifi._instant import parse_duration, parse_instant
    from asyncwifi.engine import lookback_of

    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in allowed and key not in _RENAMED:
            known = ", ".join(sorted(allowed | set(_OWN)))
            raise ConfigurationError(f"{label}: {key}: unknown field (known: {known})")
        if key in _RENAMED and _RENAMED[key] in table:
            raise ConfigurationError(f"{label}: {key}: give {_RENAMED[key]} alone")
        if key in _DURATIONS:
            seconds = _seconds(value, parse_duration)
            if seconds is None or (seconds <= 0 and key in ("poll", "refresh_every")):
                raise ConfigurationError(
                    f'{label}: {key}: a duration such as "90s", "1m", "1h" (or seconds)'
                )
            if key == "lookback":
                try:
                    seconds = lookback_of(seconds)
                except ValueError as exc:
                    raise ConfigurationError(f"{label}: lookback: {exc}") from None
            out[key] = seconds
        elif key in ("request_share", "budget", "object_share"):
            if not is_share(value):  # said without the value, as every field of the file
                of = "the month's object allowance" if key == "object_share" else "the day"
                raise ConfigurationError(f"{label}: {key}: a share of {of} in (0, 1]")
            out[_RENAMED.get(key, key)] = float(value)
        elif key == "allowance":
            try:  # the limiter's one rule (Limits.month): a number or the subscription's terms
                out[key] = dict(allowance_of(value, "allowance")) or None
            except ValidationError:  # said without the value, as every field of the file
                raise ConfigurationError(
                    f"{label}: allowance: objects a month (20000), the subscription's terms (\"10 "
                    f'access points": 2,000 each; "2000 contacts": 10 each) or a table of them '
                    f"by kind ({', '.join((ALL, *KINDS))})"
                ) from None
        elif key in ("resources", "event_types"):
            out[key] = _selection(value, label, key)
        elif key == "pii":
            from asyncwifi.engine import PiiPolicy

            try:
                PiiPolicy.parse(value if isinstance(value, str) else "")
            except ValidationError as exc:
                raise ConfigurationError(f"{label}: {exc}") from None
            out[key] = value
        elif key == "allow_http":
            if not isinstance(value, bool):
                raise ConfigurationError(f"{label}: allow_http: true or false")
            out[key] = value
        elif key == "since":
            try:
                out[key] = parse_instant(value) if isinstance(value, str) else None
            except ValueError:
                out[key] = None
            if out[key] is None:
                raise ConfigurationError(f"{label}: since: an ISO 8601 date or date-time")
        elif not isinstance(value, str) or not value:  # base_url
            raise ConfigurationError(f"{label}: {key}: must be a non-empty string")
        else:
            out[key] = value
    for old in sorted(set(table) & set(_RENAMED)):  # said once the file is read well
        log.warning("%s: %s is deprecated; use %s", label, old, _RENAMED[old])
    return out


def _seconds(value: object, parse: Any) -> float | None:
    """A duration given as seconds (a number) or as text (``"1m"``); None if neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if isinstance(value, str):
        if value.strip() == "0":
            return 0.0
        try:
            return float(parse(value).total_seconds())
        except ValueError:
            return None
    return None


def _selection(value: Any, label: str, key: str) -> tuple[str, ...]:
    """``resources`` or ``event_types``: a comma list or an array of names, checked by the
    sync's own rule (``SyncOptions``)."""
    from asyncwifi.sync import SyncOptions

    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    if not isinstance(value, str):
        raise ConfigurationError(f'{label}: {key}: names, as "a,b" or ["a", "b"]')
    try:
        chosen = (
            SyncOptions(resources=value) if key == "resources" else SyncOptions(event_types=value)
        )
    except ValidationError as exc:
        raise ConfigurationError(f"{label}: {key}: {exc}") from None
    return tuple(sorted(getattr(chosen, key)))
