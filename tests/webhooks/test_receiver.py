"""The sans-I/O receiver: every check and its status, the constant-time secret, the router."""

from __future__ import annotations

import hmac
from typing import Any

import pytest

from asyncwifi.errors import ConfigurationError
from asyncwifi.models._webhook import WebhookPayload
from asyncwifi.webhooks import Receiver, Rejection, WebhookContext
from tests.webhooks.helpers import (
    HEADER,
    NOW,
    OLD_SECRET,
    SECRET,
    auth,
    body_of,
    webhook_clock,
)


def receiver(**kwargs: Any) -> Receiver:
    kwargs.setdefault("clock", webhook_clock())
    return Receiver([SECRET, OLD_SECRET], header_name=HEADER, **kwargs)


def status(result: WebhookPayload | Rejection | None) -> int:
    if result is None or isinstance(result, WebhookPayload):
        return 200
    return result.status


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize("secrets", ["", [], [SECRET, ""], [None]])
def test_a_receiver_refuses_empty_or_missing_secrets(secrets: Any) -> None:
    with pytest.raises(ConfigurationError):
        Receiver(secrets)


def test_repr_never_shows_a_secret() -> None:
    r = receiver()
    assert SECRET not in repr(r)
    assert OLD_SECRET not in repr(r)
    assert "secrets=2" in repr(r)


# -- authentication ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, 401),
        ({HEADER: ""}, 401),
        ({HEADER: "wrong"}, 401),
        ({HEADER: SECRET[:-1]}, 401),
        ({HEADER: SECRET + "x"}, 401),
        ({HEADER: SECRET}, 200),
        ({HEADER: OLD_SECRET}, 200),
        ({HEADER.lower(): SECRET}, 200),
    ],
)
def test_authentication(headers: dict[str, str], expected: int) -> None:
    assert status(receiver().authenticate(headers)) == expected


def test_missing_and_wrong_secrets_say_which_header() -> None:
    missing = receiver().authenticate({})
    wrong = receiver().authenticate({HEADER: "nope"})
    assert missing is not None
    assert wrong is not None
    assert HEADER in missing.message
    assert "missing" in missing.message
    assert "invalid" in wrong.message
    assert "nope" not in wrong.message


@pytest.mark.parametrize("presented", [SECRET, OLD_SECRET, "wrong", "", None])
def test_every_candidate_is_compared_in_constant_time(
    monkeypatch: pytest.MonkeyPatch, presented: str | None
) -> None:
    """hmac.compare_digest runs once per accepted secret whether or not one matches early."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    r = Receiver([SECRET, OLD_SECRET, "third-secret"], header_name=HEADER)
    r.authenticate({} if presented is None else {HEADER: presented})
    assert len(calls) == 3
    # Fixed-length digests, so the secret's length does not show in the timing either.
    assert {len(a) for a, _ in calls} == {len(b) for _, b in calls} == {32}


# -- content type, size, JSON, shape -----------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/json", 200),
        ("application/json; charset=utf-8", 200),
        ("Application/JSON;charset=UTF-8", 200),
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("application/jsonp", 415),
        (None, 415),
    ],
)
def test_content_type(content_type: str | None, expected: int) -> None:
    headers = {HEADER: SECRET}
    if content_type is not None:
        headers["Content-Type"] = content_type
    assert status(receiver().check_headers(headers)) == expected


def test_authentication_comes_before_every_other_check() -> None:
    r = receiver(max_body_size=10)
    headers = {"Content-Type": "text/plain", "Content-Length": "999999"}
    assert status(r.check(headers, b"not json")) == 401


def test_a_declared_length_above_the_limit_is_413_before_reading() -> None:
    r = receiver(max_body_size=100)
    assert status(r.check_headers(auth(**{"Content-Length": "101"}))) == 413
    assert status(r.check_headers(auth(**{"Content-Length": "100"}))) == 200
    assert status(r.check_headers(auth(**{"Content-Length": "-1"}))) == 400
    assert status(r.check_headers(auth(**{"Content-Length": "\u00b2"}))) == 400


def test_a_body_above_the_limit_is_413() -> None:
    r = receiver(max_body_size=100)
    assert status(r.decode(b" " * 101)) == 413


@pytest.mark.parametrize(
    "body", [b"", b"{", b"[1", b'{"event": ', b"\xff\xfe", b"nul", b'{"a" 1}', b"{}{}"]
)
def test_malformed_json_is_400(body: bytes) -> None:
    result = receiver().decode(body)
    assert status(result) == 400
    assert isinstance(result, Rejection)
    assert result.body() == b'{"message":"malformed JSON body"}'


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'"signup"',
        b"42",
        b"null",
        b'{"event": "signup"}',
        b'{"event": {"timestamp": "yesterday"}}',
        b'{"contact": {"optin": {}}}',
        b'{"location": {"tags": "a,b"}}',
    ],
)
def test_valid_json_of_the_wrong_shape_is_422(body: bytes) -> None:
    result = receiver().decode(body)
    assert status(result) == 422
    assert isinstance(result, Rejection)
    assert "shape" in result.message


def test_a_good_request_gives_the_typed_payload() -> None:
    result = receiver().check(auth(), body_of("dwell", nonce="n-1"))
    assert isinstance(result, WebhookPayload)
    assert result.type == "dwell"
    assert result.nonce == "n-1"


# -- age ---------------------------------------------------------------------------------------


def test_events_older_than_max_age_are_409() -> None:
    clock = webhook_clock(NOW)
    r = receiver(max_age=300, clock=clock)
    assert status(r.check(auth(), body_of(timestamp=NOW - 300))) == 200
    assert status(r.check(auth(), body_of(timestamp=NOW - 301))) == 409
    clock.step(1000)
    assert status(r.check(auth(), body_of(timestamp=NOW))) == 409


def test_max_age_needs_a_timestamp() -> None:
    assert status(receiver(max_age=300).check(auth(), body_of(timestamp=None))) == 422
    assert status(receiver().check(auth(), body_of(timestamp=None))) == 200


def test_without_max_age_old_events_pass() -> None:
    assert status(receiver().check(auth(), body_of(timestamp=0))) == 200


# -- headers shown to handlers -----------------------------------------------------------------


def test_redact_drops_the_secret_header_and_lowercases() -> None:
    out = receiver().redact({HEADER: SECRET, "X-Custom": "v", "Content-Type": "application/json"})
    assert out == {"x-custom": "v", "content-type": "application/json"}


# -- routing -----------------------------------------------------------------------------------


def _payload(event_type: str | None) -> WebhookPayload:
    result = receiver().decode(body_of(event_type) if event_type else b"{}")
    assert isinstance(result, WebhookPayload)
    return result


async def test_routing_by_type_with_sync_and_async_handlers_and_a_fallback() -> None:
    r = receiver()
    seen: list[tuple[str, str | None]] = []

    @r.on("signup", "login")
    def guest(payload: WebhookPayload, context: WebhookContext) -> None:
        seen.append(("guest", payload.type))

    @r.on("geo-arriving")
    async def geo(payload: WebhookPayload, context: WebhookContext) -> None:
        seen.append(("geo", payload.type))

    @r.fallback
    async def other(payload: WebhookPayload, context: WebhookContext) -> None:
        seen.append(("other", payload.type))

    context = WebhookContext(body=b"{}")
    for event_type in ("signup", "login", "geo-arriving", "dwell", "brand-new", None):
        assert await r.dispatch(_payload(event_type), context)
    assert seen == [
        ("guest", "signup"),
        ("guest", "login"),
        ("geo", "geo-arriving"),
        ("other", "dwell"),
        ("other", "brand-new"),
        ("other", None),
    ]


async def test_without_a_fallback_other_types_are_not_dispatched() -> None:
    r = receiver()
    r.add_handler(lambda p, c: None, "signup")
    assert r.handler_for("dwell") is None
    assert not await r.dispatch(_payload("dwell"), WebhookContext(body=b"{}"))


async def test_handler_errors_propagate_from_dispatch() -> None:
    r = receiver()

    @r.on("signup")
    async def boom(payload: WebhookPayload, context: WebhookContext) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await r.dispatch(_payload("signup"), WebhookContext(body=b"{}"))


def test_routing_mistakes_are_configuration_errors() -> None:
    r = receiver()
    r.add_handler(lambda p, c: None, "signup")
    with pytest.raises(ConfigurationError, match="already"):
        r.add_handler(lambda p, c: None, "signup")
    with pytest.raises(ConfigurationError):
        r.on()
    with pytest.raises(ConfigurationError):
        r.add_handler(lambda p, c: None, "")
    r.fallback(lambda p, c: None)
    with pytest.raises(ConfigurationError, match="fallback"):
        r.fallback(lambda p, c: None)
