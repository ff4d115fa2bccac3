"""Helpers shared by the webhook receiver tests: a fake clock, payloads, polling."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests._virtualclock import VirtualClock

SECRET = "s3cret-current"
OLD_SECRET = "s3cret-previous"
HEADER = "X-Webhook-Secret"
NOW = 1_700_000_000.0

_counter = itertools.count()


def webhook_clock(start: float = NOW) -> VirtualClock:
    """The suite's stepping clock for a receiver: moved by hand (``step``) or by a sleep; a
    clock second lasts a real millisecond at most (a handler's timeout, taken from it, must
    not fire before the handler runs)."""
    return VirtualClock.stepping(start, real=0.001)


def new_nonce() -> str:
    return f"n-{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:8]}"


def payload(
    event_type: str = "signup",
    *,
    nonce: str | None = None,
    timestamp: float | None = NOW,
    **extra: Any,
) -> dict[str, Any]:
    """A spec §6.2 payload as a dict (a fresh nonce unless given)."""
    event: dict[str, Any] = {
        "type": event_type,
        "nonce": nonce if nonce is not None else new_nonce(),
        "dwellTime": None,
        "timestamp": timestamp,
    }
    body: dict[str, Any] = {
        "hotspot": {"id": "hs-1"},
        "organization": {"id": "org-1"},
        "location": {"id": "loc-1", "country": "IT", "address": "Via Roma 1", "tags": ["a"]},
        "event": event,
        "contact": {"id": "c-1", "firstname": "Ada", "email": "ada@example.com"},
    }
    body.update(extra)
    return body


def body_of(event_type: str = "signup", **kwargs: Any) -> bytes:
    return msgspec.json.encode(payload(event_type, **kwargs))


def auth(secret: str = SECRET, **more: str) -> dict[str, str]:
    return {HEADER: secret, "Content-Type": "application/json", **more}


ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]


async def eventually(check: Callable[[], bool], *, timeout: float = 5.0) -> None:
    """Poll ``check`` until it holds (real time, short); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)
