"""Hypothesis throws bodies, headers and raw bytes at a live receiver: it answers 4xx (or a
2xx when the request happens to be valid) with a JSON body, and keeps serving."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncwifi.models._webhook import WebhookPayload
from asyncwifi.webhooks import Receiver
from asyncwifi.webhooks._app import create_app
from tests.webhooks.helpers import HEADER, NOW, SECRET, ClientFactory, auth, body_of, webhook_clock

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
# Valid payloads with any field replaced by any JSON value.
payload_fields = st.sampled_from(
    ["event", "contact", "geofence", "location", "hotspot", "organization", "unknown"]
)
mutated_payloads = st.builds(
    lambda key, value: msgspec.json.encode({**msgspec.json.decode(body_of()), key: value}),
    payload_fields,
    json_values,
)
bodies = st.one_of(
    st.binary(max_size=600),
    json_values.map(msgspec.json.encode),
    mutated_payloads,
    st.just(body_of()),
)
header_text = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=0, max_size=40
)
secrets = st.one_of(st.none(), st.just(""), st.just(SECRET), header_text)
content_types = st.one_of(
    st.none(),
    st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain"]),
    header_text,
)
extra_headers = st.dictionaries(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12).map(
        lambda name: "x-" + name
    ),
    header_text,
    max_size=4,
)

EXPECTED = {200, 202, 400, 401, 409, 413, 415, 422}


@pytest.fixture
async def live(make_client: ClientFactory) -> Any:
    receiver = Receiver(
        SECRET, header_name=HEADER, max_body_size=512, max_age=3600, clock=webhook_clock()
    )
    receiver.fallback(lambda payload, context: None)
    return await make_client(create_app(receiver))


async def still_serving(client: Any) -> None:
    response = await client.post("/webhooks", data=body_of(), headers=auth())
    assert response.status == 200
    assert await response.json() == {"status": "handled"}


@FUZZ
@given(body=bodies, secret=secrets, content_type=content_types, extra=extra_headers)
async def test_any_request_gets_a_json_answer_and_never_a_5xx(
    live: Any, body: bytes, secret: str | None, content_type: str | None, extra: dict[str, str]
) -> None:
    headers = dict(extra)
    if secret is not None:
        headers[HEADER] = secret
    if content_type is not None:
        headers["Content-Type"] = content_type
    else:
        headers["Content-Type"] = ""  # aiohttp would otherwise add one
    response = await live.post("/webhooks", data=body, headers=headers)
    assert response.status in EXPECTED
    assert response.content_type == "application/json"
    reply = await response.json()
    if secret != SECRET:
        assert response.status == 401
    if response.status >= 400:
        assert isinstance(reply["message"], str)
    await still_serving(live)


@FUZZ
@given(garbage=st.binary(min_size=1, max_size=300))
async def test_raw_garbage_on_the_socket_does_not_stop_the_server(
    live: Any, garbage: bytes
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", live.port)
    try:
        writer.write(garbage + b"\r\n\r\n")
        await writer.drain()
        writer.write_eof()
        await asyncio.wait_for(reader.read(), 5)
    except (ConnectionError, TimeoutError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    await still_serving(live)


async def test_old_events_in_the_fuzz_are_refused(live: Any) -> None:
    response = await live.post("/webhooks", data=body_of(timestamp=NOW - 7200), headers=auth())
    assert response.status == 409


any_text = st.text(max_size=30)


@settings(max_examples=150, deadline=None)
@given(
    headers=st.dictionaries(
        st.sampled_from([HEADER, "content-type", "Content-Length", "x-other"]) | any_text,
        any_text,
        max_size=5,
    ),
    body=bodies,
    now=st.floats(allow_nan=False, allow_infinity=False),
)
def test_the_pure_checks_never_raise(headers: dict[str, str], body: bytes, now: float) -> None:
    receiver = Receiver(SECRET, header_name=HEADER, max_body_size=512, max_age=60)
    result = receiver.check(headers, body, now=now)
    assert isinstance(result, WebhookPayload) or result.status in EXPECTED
