"""A hotspot or segment that does not decode is set aside as a stream sets its records
aside (issue 40): the list holds every other one, the bad one is a warning and goes to
``on_item_error`` with its bytes. It raised a ``DecodeError`` for the whole list."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from asyncwifi.models import ItemError
from asyncwifi.testing import Simulator
from tests.client._other_server import OtherServer
from tests.client._support import NO_LIMITS, client_for


def _spoil(key: str, index: int) -> Any:
    """A rewrite that gives record ``index`` of the list ``key`` a name no model reads."""

    def rewrite(_path: str, body: Any) -> Any:
        if isinstance(body, dict) and isinstance(body.get(key), list):
            body[key][index]["name"] = {"not": "a name"}
        return body

    return rewrite


@pytest.mark.parametrize(("resource", "key"), [("segments", "segments"), ("hotspots", "hotspots")])
async def test_a_record_that_does_not_decode_is_set_aside(
    resource: str, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        Simulator(rate_limit_mode="off", contacts=5) as sim,
        OtherServer(sim, rewrite=_spoil(key, 1)) as other,
    ):
        async with client_for(sim, limits=NO_LIMITS) as api:
            served = [item.id for item in await getattr(api, resource).list()]
        bad_id = served[1]
        aside: list[ItemError] = []
        async with client_for(sim, other.base_url, limits=NO_LIMITS) as api:
            listed = await getattr(api, resource).list(on_item_error=aside.append)
    assert len(served) > 2
    assert [item.id for item in listed] == [i for i in served if i != bad_id]
    assert [error.id for error in aside] == [bad_id]
    assert b'"not"' in aside[0].raw
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"{resource}: a record did not decode and was set aside" in w for w in warned)
