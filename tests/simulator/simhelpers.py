"""Helpers for the simulator's conformance tests: a hand-stepped clock and a tiny API client.

The client here is deliberately naive (plain aiohttp calls written from the spec), so the
tests check the simulator, not the SDK's client.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import aiohttp
from multidict import CIMultiDictProxy

from asyncwifi.testing import Simulator

LOGIN = "/v1/sts/login/services"
#: 2024-03-01T12:00:00Z, a minute boundary
BOUNDARY = 1_709_294_400.0


@dataclass
class Answer:
    """One response: status, headers, raw body (and JSON, when it parses)."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def message(self) -> str:
        return str(self.json["message"])


class Caller:
    """Sends requests to a simulator the way the spec describes, remembering one token;
    as its first organization, or as organization ``tenant`` (an index) of many."""

    def __init__(self, sim: Simulator, session: aiohttp.ClientSession, tenant: int = 0) -> None:
        self.sim = sim
        self.session = session
        self.token: str | None = None
        self.organization, self.client_key, self.client_secret = sim.organizations[tenant]

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
    ) -> Answer:
        sent = {"Accept": "application/json"}
        if auth and self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        sent.update(headers or {})
        async with self.session.request(
            method, self.sim.url(path), params=params, json=json_body, headers=sent
        ) as resp:
            return Answer(resp.status, resp.headers, await resp.read())

    async def login(self) -> Answer:
        answer = await self.call(
            "POST",
            LOGIN,
            json_body={"clientKey": self.client_key, "clientSecret": self.client_secret},
            auth=False,
        )
        if answer.status == 200:
            self.token = answer.json["token"]
        return answer

    async def get(self, path: str, **params: str) -> Answer:
        return await self.call("GET", path, params=params)

    def org(self, prefix: str, suffix: str = "") -> str:
        """An organization path: ``prefix`` + the organization id + ``suffix``."""
        return f"{prefix}{self.organization}{suffix}"


def jwt_parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of a JWT (no verification)."""
    head, claims, _ = token.split(".")

    def decode(part: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        return data

    return decode(head), decode(claims)
