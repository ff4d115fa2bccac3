"""``client.request``'s checks and readings: any endpoint, its arguments checked before a
request is spent, its objects counted by one stated rule (:func:`count_records`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from asyncwifi._core import RequestPipeline
from asyncwifi._options import RawResponse, capturing
from asyncwifi._protocol import Tag, require_text
from asyncwifi.errors import DecodeError, ValidationError

__all__ = ["PlainRequest", "count_records", "decode_json", "plain_request", "send_request"]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
#: a body's members that hold a list of records, as the reference's envelopes name them
_LISTS = ("data", "items", "content", "results")


def count_records(body: object) -> int:
    """The objects an answer holds (spec §8), where the reference does not describe it
    (assumption): a list's items, an envelope's ``data`` (``items``, ``content``,
    ``results``) list's items or its one list's, else one for a non-empty body, none for
    an empty one."""
    if isinstance(body, list):
        return len(body)
    if isinstance(body, dict):
        for name in _LISTS:
            if isinstance(body.get(name), list):
                return len(body[name])
        lists = [v for v in body.values() if isinstance(v, list)]
        if len(lists) == 1:  # an envelope of one list under its own name (``accountings``)
            return len(lists[0])
        return 1 if body else 0
    return 0 if body is None else 1


def decode_json(body: bytes | memoryview) -> Any:
    """The body as JSON (None when empty); a body that is not JSON is a ``DecodeError``."""
    data = bytes(body)
    if not data.strip():
        return None
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(f"the response is not JSON: {exc}") from exc


@dataclass(frozen=True, slots=True)
class PlainRequest:
    """A checked ``client.request``: what the pipeline sends and how it counts."""

    method: str
    path: str
    params: dict[str, str] | None
    body: bytes | None
    tag: Tag
    count: Any


def _param(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ValidationError(f"params[{name!r}] must be text, a number or a bool, got {value!r}")


def plain_request(
    method: object, path: object, params: object, json: object, objects: object
) -> PlainRequest:
    """Check ``client.request``'s arguments, before any request is spent."""
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise ValidationError(f"method must be one of {METHODS}, got {method!r}")
    text = require_text(path, "path")
    if not text.startswith("/") or "://" in text or "?" in text or " " in text:
        raise ValidationError(
            f"path must be the API's path, beginning with '/', without a query (pass params), "
            f"got {text!r}"
        )
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError(f"params must be a mapping, got {type(params).__name__}")
    query = None if params is None else {str(k): _param(str(k), v) for k, v in params.items()}
    if objects is not None and (not isinstance(objects, str) or not objects.isidentifier()):
        raise ValidationError(f"objects must be an object kind such as 'contacts', got {objects!r}")
    method = method.upper()
    if json is not None and method == "GET":
        raise ValidationError("a GET sends no body: pass params")
    try:
        body = None if json is None else msgspec.json.encode(json)
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValidationError(f"json cannot be encoded: {exc}") from None
    tag = cast(Tag, objects or "other")
    return PlainRequest(method, text, query, body, tag, count_records if objects else None)


async def send_request(
    api: RequestPipeline,
    method: object,
    path: object,
    params: object,
    json: object,
    objects: str | None,
) -> RawResponse[Any]:
    """``client.request``: checked, then sent through ``api`` (a GET as a read, another
    method as a write that is never repeated unless it certainly did not happen)."""
    call = plain_request(method, path, params, json, objects)
    with capturing() as responses:
        if call.method == "GET":
            parsed = await api.read(
                call.method, call.path, tag=call.tag, params=call.params,
                objects=objects, decode=decode_json, count=call.count,
            )  # fmt: skip
        else:
            parsed = await api.write(
                call.method, call.path, tag=call.tag, params=call.params, body=call.body,
                objects=objects, decode=decode_json, verify=None, count=call.count,
            )  # fmt: skip
    return RawResponse.of(responses[-1], parsed)
