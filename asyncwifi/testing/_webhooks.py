"""Webhook payloads (spec §6.2) and the emitter behind ``Simulator.emit_webhook``.

:func:`make_webhook_payload` builds, without any server, the body the platform would POST
for a moment, like the dashboard's "send a test event": ``hotspot``, ``organization``,
``location``, ``event`` (type, nonce, dwellTime, timestamp), ``contact`` (with optin,
customFields, metrics.visitCount, extraFields.extIds) and, for the geo-* moments,
``geofence``. Keyword overrides are merged into it (dicts recursively), and ``body_fields``
keeps only the chosen attributes (dotted paths), as the dashboard's Body option does.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
import msgspec

from asyncwifi.errors import ValidationError
from asyncwifi.models import WEBHOOK_EVENT_TYPES
from asyncwifi.testing._data import SimulatorData
from asyncwifi.testing._defaults import SIMULATOR_DEFAULTS as D
from asyncwifi.testing._util import mix

if TYPE_CHECKING:
    from asyncwifi.testing._view import SimulatorView

__all__ = ["WEBHOOK_TYPES", "build_payload", "make_webhook_payload", "post_webhook"]

#: spec §6.2: every value of ``event.type``
#: every spec §6.2 ``event.type`` value: the models' list, one source of truth
WEBHOOK_TYPES: tuple[str, ...] = WEBHOOK_EVENT_TYPES
_AT_ACCESS_POINT = ("signup", "login")  # spec §6.2: hotspot.id is null for the others
_WITH_DWELL = ("dwell", "leave", "geo-dwell", "geo-leave")


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def _pick(payload: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in fields:
        parts = path.split(".")
        src: Any = payload
        for part in parts:
            if not isinstance(src, Mapping) or part not in src:
                break
            src = src[part]
        else:
            dst = out
            for part in parts[:-1]:
                dst = dst.setdefault(part, {})
            dst[parts[-1]] = src
    return out


def build_payload(
    data: SimulatorData,
    moment: str,
    rnd: random.Random,
    now: float,
    *,
    body_fields: Iterable[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The §6.2 payload for ``moment`` about a contact and location drawn from ``data``."""
    if moment not in WEBHOOK_TYPES:
        raise ValidationError(
            f"unknown webhook moment {moment!r}; one of {', '.join(WEBHOOK_TYPES)}"
        )
    contacts = list(data.live_contacts())
    c = rnd.choice(contacts) if contacts else None
    loc = data.locations[rnd.randrange(len(data.locations))]
    hotspots = [h for h in data.hotspots.values() if h["venueId"] == loc["id"]]
    hotspot_id = rnd.choice(hotspots)["id"] if hotspots and moment in _AT_ACCESS_POINT else None
    payload: dict[str, Any] = {
        "hotspot": {"id": hotspot_id},
        "organization": {"id": data.organization},
        "location": {
            "id": loc["id"],
            "country": loc["country"],
            "address": loc["address"],
            "extId": loc["extId"],
            "tags": list(loc["tags"]),
        },
        "event": {
            "type": moment,
            "nonce": str(uuid.UUID(int=rnd.getrandbits(128), version=4)),
            "dwellTime": rnd.randrange(60, 5400) if moment in _WITH_DWELL else None,
            "timestamp": int(now),
        },
        "contact": _contact(c, loc) if c is not None else {},
    }
    if moment.startswith("geo-"):
        payload["geofence"] = {
            "metadata": [{"key": "zone", "value": "entrance"}],
            "name": f"{loc['name']} entrance",
            "geometry": {
                "type": "Circle",
                "coordinates": [loc["longitude"], loc["latitude"]],
                "radius": 150,
            },
            "id": f"geo-{loc['id'][:12]}",
            "extId": f"{loc['extId']}-geo",
            "tags": ["entrance"],
        }
    if overrides:
        _merge(payload, overrides)
    return _pick(payload, body_fields) if body_fields is not None else payload


def _contact(c: Mapping[str, Any], loc: Mapping[str, Any]) -> dict[str, Any]:
    optin = [
        {
            "date": p["date"],
            "name": p["name"],
            "accepted": p["accepted"],
            "id": 0,
            "type": "LEGACY",
            "version": p["version"],
        }
        for p in c["policies"]
    ]
    optin.append(
        {
            "date": c["created"],
            "name": "loyaltyProgram",
            "accepted": bool(c["_index"] % 2),
            "id": 17,
            "type": "custom",
            "version": "1",
        }
    )
    ext = c["extId"] or {"id": "", "prop1": "", "prop2": ""}
    return {
        "id": c["cid"],
        "birthday": f"{c['birthDate']}-{c['birthDay']}",
        "country": loc["country"],
        "firstname": c["firstName"],
        "lastname": c["lastName"],
        "email": c["email"],
        "phone": c["phone"],
        "civilStatus": c["title"],
        "language": c["language"],
        "personalid": c["personalId"],
        "gender": c["gender"],
        "created": c["created"],
        "marketing": c["_mktg"],
        "provider": c["signupMethod"],
        "ageVerification": c["ageVerification"],
        "online": bool(c["_index"] % 3),
        "type": c["type"],
        "username": c["username"],
        "metrics": {"visitCount": c["logins"]},
        "extraFields": {"extIds": dict(ext)},
        "customFields": [dict(f) for f in c["genericCustomField"]],
        "optin": optin,
    }


_SMALL: dict[int, SimulatorData] = {}


def make_webhook_payload(
    moment: str = "signup",
    *,
    seed: int = D.seed,
    now: float | None = None,
    organization: str | None = None,
    body_fields: Iterable[str] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """A realistic spec §6.2 webhook body for ``moment`` (any ``event.type`` value).

    Deterministic for a ``seed`` (and ``now``, epoch seconds, default 2024-01-15T12:00Z).
    ``overrides`` are merged in (``contact={"email": ...}`` changes one field);
    ``body_fields`` keeps only the listed attributes (``["event", "contact.email"]``).
    """
    data = _SMALL.get(seed)
    if data is None:
        data = _SMALL[seed] = SimulatorData(
            seed=seed,
            organization=f"org-{seed:016x}",
            contacts=16,
            hotspots=6,
            segments=0,
            events=0,
            events_start=0.0,
            events_end=0.0,
            event_shape=D.event_shape,
            hotspot_date=D.hotspot_date,
        )
    payload = build_payload(
        data,
        moment,
        random.Random(mix(seed, 0x3EB)),
        1_705_320_000.0 if now is None else now,
        overrides=overrides,
        body_fields=None,
    )
    if organization is not None:
        payload["organization"]["id"] = organization
    return _pick(payload, body_fields) if body_fields is not None else payload


async def post_webhook(
    sim: SimulatorView,
    url: str,
    moment: str,
    *,
    headers: Mapping[str, str] | None,
    body_fields: Iterable[str] | None,
    request_timeout: float,
    overrides: Mapping[str, Any],
) -> int:
    """POST one payload built from ``sim``'s data to ``url``, counted on ``sim.counters``;
    the receiver's status."""
    rnd = random.Random(mix(sim.seed, 0x3EB, sim.counters.webhooks_sent))
    payload = build_payload(
        sim.data, moment, rnd, sim.clock.now(), body_fields=body_fields, overrides=overrides
    )
    sent = {
        "Content-Type": "application/json",
        "User-Agent": "asyncwifi-simulator-webhooks/1",
        **(headers or {}),
    }
    timeout = aiohttp.ClientTimeout(total=request_timeout)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, data=msgspec.json.encode(payload), headers=sent) as resp,
    ):
        await resp.read()
    sim.counters.webhooks_sent += 1
    sim.counters.webhook_statuses[resp.status] += 1
    return resp.status
