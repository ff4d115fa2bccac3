"""Fixtures for the webhook receiver tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from tests._virtualclock import VirtualClock
from tests.webhooks.helpers import ClientFactory, webhook_clock


@pytest.fixture
def fake_clock() -> VirtualClock:
    return webhook_clock()


@pytest.fixture
async def make_client() -> AsyncIterator[ClientFactory]:
    """Start an app on a real loopback port and give a client for it; all closed after."""
    clients: list[TestClient[Any, Any]] = []

    async def factory(app: web.Application) -> TestClient[Any, Any]:
        client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield factory
    for client in reversed(clients):
        await client.close()
