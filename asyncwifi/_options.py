"""The per-call door: options for the calls of one view of a client
(``client.with_options(...)``, :class:`CallOptions`), and what a response was, beside what it
meant (:class:`RawResponse`: ``with_raw_response``, ``client.request``).

A view shares the client's pipeline, token and limiter: no second session, no second count.
``max_wait`` is an *admission deadline*: a call whose request the limiter could not admit
within it raises :class:`~asyncwifi.errors.QuotaExhaustedError` (``limit="max_wait"``, its
``reset_at`` the clock time it could have been sent) at once when the limiter already knows,
else when the deadline passes; it is never sent late. Each attempt of the call is held to the
call's one deadline (a retry after a 429 too).
"""

from __future__ import annotations

import contextvars
import copy
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, Self, TypeVar

import msgspec

from asyncwifi._retry import RetryPolicy
from asyncwifi._transport import Response
from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit import Lane, RateLimitHeaders

__all__ = [
    "CallOptions",
    "LastResponse",
    "PerCall",
    "RawResponse",
    "RawResponses",
    "captured",
    "capturing",
    "lane_of",
]

T = TypeVar("T")

#: the lanes by name, as a user may write them (``lane="interactive"``)
_LANES = {lane.name.lower(): lane for lane in Lane}


def lane_of(value: object) -> Lane:
    """A :class:`~asyncwifi.ratelimit.Lane`, or its name (``"interactive"``, ``"bulk"``...)."""
    if isinstance(value, Lane):
        return value
    if isinstance(value, str) and value.lower() in _LANES:
        return _LANES[value.lower()]
    raise ValidationError(f"lane must be a Lane or one of {sorted(_LANES)}, got {value!r}")


def _seconds(value: object, what: str, *, zero: bool) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0 or (value == 0 and not zero):  # type: ignore[operator,arg-type]
        bound = ">= 0" if zero else "> 0"
        raise ValidationError(f"{what} must be a finite number of seconds {bound}, got {value!r}")
    return float(value)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class CallOptions:
    """What a view changes for its calls (None: the client's own). ``timeout``: seconds a
    request may take to its last byte; ``retry``: the :class:`~asyncwifi.RetryPolicy`;
    ``max_wait``: seconds a call may wait for the limiter's admission (see the module);
    ``lane``: the limiter's lane of every request of the view (a person's call in
    ``"interactive"``, ahead of a backfill's ``"bulk"``)."""

    timeout: float | None = None
    retry: RetryPolicy | None = None
    max_wait: float | None = None
    lane: Lane | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None:
            object.__setattr__(self, "timeout", _seconds(self.timeout, "timeout", zero=False))
        if self.retry is not None and not isinstance(self.retry, RetryPolicy):
            raise ValidationError(f"retry must be a RetryPolicy, got {type(self.retry).__name__}")
        if self.max_wait is not None:
            object.__setattr__(self, "max_wait", _seconds(self.max_wait, "max_wait", zero=True))
        if self.lane is not None:
            object.__setattr__(self, "lane", lane_of(self.lane))

    def over(self, base: CallOptions) -> CallOptions:
        """These options, the unset ones taken from ``base`` (a view of a view)."""
        return CallOptions(
            self.timeout if self.timeout is not None else base.timeout,
            self.retry if self.retry is not None else base.retry,
            self.max_wait if self.max_wait is not None else base.max_wait,
            self.lane if self.lane is not None else base.lane,
        )


@dataclass(frozen=True, slots=True)
class RawResponse(Generic[T]):
    """A response as it came (the last attempt's), beside its meaning: ``status``,
    ``headers``, the gateway's ``request_id``, ``rate_limit`` (the quota and objects its
    headers reported), ``elapsed`` (seconds, send to last byte) and the ``body`` bytes;
    :meth:`parse` gives the typed result the plain call returns, :meth:`json` the body."""

    status: int
    headers: Mapping[str, str]
    request_id: str | None
    rate_limit: RateLimitHeaders
    elapsed: float
    body: bytes
    _parsed: T = field(repr=False)

    @classmethod
    def of(cls, response: Response, parsed: T) -> RawResponse[T]:
        return cls(
            response.status,
            response.headers,
            response.request_id,
            RateLimitHeaders.from_headers(response.headers),
            response.elapsed,
            bytes(response.body),
            parsed,
        )

    def parse(self) -> T:
        """The typed result (a ``Contact``, a list of ``Hotspot``...), as the plain call's."""
        return self._parsed

    def json(self) -> Any:
        """The body decoded as JSON (None when it is empty)."""
        return msgspec.json.decode(self.body) if self.body.strip() else None

    def __repr__(self) -> str:
        return f"<RawResponse {self.status} request_id={self.request_id!r} {len(self.body)} B>"


#: the responses of the calls made under :func:`capturing` (this task's, and its own)
_captured: contextvars.ContextVar[list[Response] | LastResponse | None] = contextvars.ContextVar(
    "asyncwifi_captured", default=None
)


class LastResponse:
    """Where a stream keeps its last page's response (``stream.last_response``): status,
    headers and elapsed time, not the body (the page's records are the stream's)."""

    __slots__ = ("response",)

    def __init__(self) -> None:
        self.response: Response | None = None

    def append(self, response: Response) -> None:
        self.response = Response(response.status, response.headers, b"", response.elapsed)

    def context(self) -> contextvars.Context:
        """A context whose calls report here (the stream's background task runs in it)."""
        context = contextvars.copy_context()
        context.run(_captured.set, self)
        return context

    def raw(self) -> RawResponse[None] | None:
        """The last response as a :class:`RawResponse` (``parse()``: None), or None."""
        return None if self.response is None else RawResponse.of(self.response, None)


@contextmanager
def capturing() -> Iterator[list[Response]]:
    """Collect the responses of the calls made inside (every attempt's, in order)."""
    responses: list[Response] = []
    token = _captured.set(responses)
    try:
        yield responses
    finally:
        _captured.reset(token)


def captured(response: Response) -> None:
    """The pipeline's report of a response (kept when someone is :func:`capturing`)."""
    responses = _captured.get()
    if responses is not None:
        responses.append(response)


class RawResponses:
    """``resource.with_raw_response``: the resource's awaitable methods, each returning a
    :class:`RawResponse` whose :meth:`~RawResponse.parse` is what the method returns."""

    __slots__ = ("_resource",)

    def __init__(self, resource: object) -> None:
        self._resource = resource

    def __getattr__(self, name: str) -> Callable[..., Awaitable[RawResponse[Any]]]:
        method = getattr(self._resource, name)
        if name.startswith("_") or not callable(method):
            raise AttributeError(name)

        async def call(*args: Any, **kwargs: Any) -> RawResponse[Any]:
            with capturing() as responses:
                result = method(*args, **kwargs)
                if not isinstance(result, Awaitable):
                    raise ValidationError(
                        f"with_raw_response.{name}: a stream has no one response "
                        "(read stream.last_response instead)"
                    )
                parsed = await result
            if not responses:  # pragma: no cover - every awaitable method sends a request
                raise ValidationError(f"with_raw_response.{name}: no request was sent")
            return RawResponse.of(responses[-1], parsed)

        return call


class Derivable(Protocol):
    """What a view needs of the pipeline (``RequestPipeline.derive``)."""

    def derive(self, options: CallOptions) -> Any: ...


class PerCall:
    """The per-call door of a resource (``client.contacts.with_options(...)``,
    ``client.contacts.with_raw_response``): a mixin of the resource namespaces, which keep
    their pipeline in ``_api``."""

    __slots__ = ()

    def with_options(
        self,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        max_wait: float | None = None,
        lane: Lane | str | None = None,
    ) -> Self:
        """This resource with other options for its calls (see :class:`CallOptions`); it
        shares the client's session, token and limiter."""
        options = CallOptions(timeout, retry, max_wait, lane)  # type: ignore[arg-type]
        return self.on(self._api.derive(options))  # type: ignore[attr-defined]

    def on(self, api: Derivable) -> Self:
        """This resource on another pipeline (a view's)."""
        view = copy.copy(self)
        view._api = api  # type: ignore[attr-defined]
        return view

    @property
    def with_raw_response(self) -> RawResponses:
        """The methods that await one answer, each returning a :class:`RawResponse`."""
        return RawResponses(self)
