"""What a response means, decided once (as gidgethub's ``decipher_response``): sans-I/O.

The client's pipeline reads a response's rate-limit headers once
(:class:`~asyncwifi.ratelimit.RateLimitHeaders`), feeds them to the scheduler and hands them
here, so that the scheduler's pause and the exception's ``retry_after`` come from one
reading: ``Retry-After`` in seconds or as an HTTP date, else ``RateLimit-Reset``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import msgspec

from asyncwifi._transport import request_id_of
from asyncwifi.errors import ApiError, RateLimitedError, error_for_status
from asyncwifi.ratelimit import RateLimitHeaders

__all__ = ["error_from_response"]


class _ErrorBody(msgspec.Struct):
    message: str | None = None


_error_decoder = msgspec.json.Decoder(_ErrorBody)
_TITLE = re.compile(rb"<title>(.*?)</title>|<h1>(.*?)</h1>", re.IGNORECASE | re.DOTALL)


def _message_of(status: int, body: bytes) -> str:
    """The server's message, read defensively: JSON ``{message}``, HTML title, text, or
    the reason phrase when the body is empty (the gateway's bodyless 429)."""
    text = body.strip()
    if text.startswith(b"{"):
        try:
            message = _error_decoder.decode(text).message
        except (msgspec.DecodeError, RecursionError):
            message = None
        if message:
            return message
    elif text.startswith(b"<"):
        match = _TITLE.search(text)
        if match:
            raw = match.group(1) or match.group(2) or b""
            return raw.decode("utf-8", "replace").strip()[:200]
    elif text:
        return text.decode("utf-8", "replace").strip()[:200]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "HTTP error"


def error_from_response(
    method: str,
    path: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    limits: RateLimitHeaders | None = None,
) -> ApiError:
    """The exception for an error response (one class per documented status, spec §7).

    ``limits``: the response's rate-limit headers, already parsed (parsed here if not).
    """
    cls = error_for_status(status)
    message = _message_of(status, body)
    request_id = request_id_of(headers)
    if cls is RateLimitedError:
        if limits is None:
            limits = RateLimitHeaders.from_headers(headers)
        retry_after = limits.delay(now)
        rate: dict[str, Any] = {
            k.lower(): v
            for k, v in headers.items()
            if "ratelimit" in k.lower() or k.lower() == "retry-after"
        }
        return RateLimitedError(
            message,
            method=method,
            path=path,
            request_id=request_id,
            body=body,
            retry_after=retry_after,
            reset_at=None if retry_after is None else now + retry_after,
            rate_limit=rate,
        )
    return cls(message, status=status, method=method, path=path, request_id=request_id, body=body)
