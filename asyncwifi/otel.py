"""OpenTelemetry instrumentation of asyncwifi clients (``asyncwifi[otel]``).

``instrument(client)`` (or ``instrument()`` for every client created afterwards) adds, per
API call, a span ``asyncwifi {method}``; inside it, per attempt, an HTTP client span
``{method}`` (semantic conventions: ``http.request.method``, ``url.path``,
``server.address``, ``http.response.status_code``, ``error.type``, plus the quota state),
whose child ``asyncwifi.scheduler.wait`` is the wait for a scheduler slot, apart from the
network time. Retries are span events; a 429 is an attempt with status 429 followed by one
whose slot wait is the pause. Metrics: requests, 429s, scheduler wait, quota remaining,
scroll resumes. No attribute ever holds a token, a secret or a query string.
"""

from __future__ import annotations

import contextlib
import functools
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from asyncwifi._client import Client, HookKind
from asyncwifi._hooks import RequestInfo, ResponseInfo, RetryInfo
from asyncwifi._scopes import CallInfo
from asyncwifi._version import __version__
from asyncwifi.errors import ConfigurationError

__all__ = ["instrument"]

#: the instrumentation scope's name (tracer and meter)
SCOPE = "asyncwifi"

#: every instrumented client, and what instrumented it (one instrumentation per client)
_probes: weakref.WeakKeyDictionary[Client, _Probe] = weakref.WeakKeyDictionary()
#: the instrumentation of every new client, when ``instrument()`` was called without one
_global: list[Instrumentation] = []


@dataclass(slots=True)
class _Attempt:
    """What the hooks learn of the attempt in progress (a context variable holds it)."""

    #: the request left (a slot was granted): only then does it count as a request
    sent: bool = False
    status: int | None = None


_attempt: ContextVar[_Attempt | None] = ContextVar("asyncwifi_otel_attempt", default=None)


def _error_type(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    return str(status) if isinstance(status, int) else type(exc).__qualname__


class _Probe:
    """The hooks installed on one client; they report to one :class:`Instrumentation`."""

    def __init__(self, owner: Instrumentation, client: Client) -> None:
        self.owner = owner
        self.client = weakref.ref(client)
        url = urlsplit(client.base_url)
        self.server: dict[str, str | int] = {"server.address": url.hostname or ""}
        if url.port is not None:
            self.server["server.port"] = url.port
        self.quota: dict[str, int] = {}
        #: what removes each hook from the client (``Client.add_hook`` returns them)
        self.removers: list[Callable[[], None]] = []

    def _attributes(self, method: str, path: str) -> dict[str, Any]:
        # url.path only: queries are never recorded (they may carry filters or scroll ids)
        return {"http.request.method": method, "url.path": path, **self.server}

    @contextlib.contextmanager
    def call(self, info: CallInfo) -> Iterator[None]:
        with self.owner.tracer.start_as_current_span(
            f"asyncwifi {info.method}",
            kind=SpanKind.INTERNAL,
            attributes={**self._attributes(info.method, info.path), "asyncwifi.kind": info.kind},
            record_exception=False,  # exception messages are not attributes we vouch for
            set_status_on_exception=False,
        ) as span:
            try:
                yield
            except Exception as exc:
                span.set_attribute("error.type", _error_type(exc))
                span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
                raise

    @contextlib.contextmanager
    def attempt(self, info: CallInfo) -> Iterator[None]:
        attributes = self._attributes(info.method, info.path)
        if info.attempt > 1:
            attributes["http.request.resend_count"] = info.attempt - 1
        state = _Attempt()
        token = _attempt.set(state)
        error: str | None = None
        try:
            with self.owner.tracer.start_as_current_span(
                info.method,
                kind=SpanKind.CLIENT,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                try:
                    yield
                except Exception as exc:
                    error = str(state.status) if state.status else _error_type(exc)
                    span.set_attribute("error.type", error)
                    span.set_status(Status(StatusCode.ERROR, error))
                    raise
        finally:
            _attempt.reset(token)
            if state.sent:
                self._count(info, state, error)

    def _count(self, info: CallInfo, state: _Attempt, error: str | None) -> None:
        counted: dict[str, Any] = {"http.request.method": info.method, **self.server}
        if state.status is not None:
            counted["http.response.status_code"] = state.status
        if error is not None:
            counted["error.type"] = error
        self.owner.requests.add(1, counted)

    def on_request(self, info: RequestInfo) -> None:
        """The slot is acquired: the wait becomes a span of its own, ending now."""
        now = time.time_ns()
        state = _attempt.get()
        if state is not None:
            state.sent = True
        waited = max(0.0, info.waited)
        owner = self.owner
        owner.tracer.start_span(
            "asyncwifi.scheduler.wait",
            start_time=now - int(waited * 1e9),
            attributes={"asyncwifi.scheduler.wait": waited},
        ).end(end_time=now)
        trace.get_current_span().set_attribute("asyncwifi.scheduler.wait", waited)
        owner.wait.record(waited, {"http.request.method": info.method, **self.server})

    def on_response(self, info: ResponseInfo) -> None:
        state = _attempt.get()
        if state is not None:
            state.status = info.status
        span = trace.get_current_span()
        span.set_attribute("http.response.status_code", info.status)
        if info.status >= 400:
            span.set_attribute("error.type", str(info.status))
        attributes = {"http.request.method": info.method, **self.server}
        self.owner.duration.record(
            info.elapsed, {**attributes, "http.response.status_code": info.status}
        )
        if info.status == 429:
            span.add_event("asyncwifi.rate_limited", {"http.response.status_code": 429})
            self.owner.rate_limited.add(1, attributes)
        client = self.client()
        if client is None:
            return
        quota = client.quota
        for name, window in (("minute", quota.minute), ("day", quota.day)):
            if window is not None and window.remaining is not None:
                self.quota[name] = window.remaining
                span.set_attribute(f"asyncwifi.quota.{name}.remaining", window.remaining)

    def on_retry(self, info: RetryInfo) -> None:
        trace.get_current_span().add_event(
            "asyncwifi.retry",
            {
                "http.request.resend_count": info.attempt,
                "asyncwifi.retry.wait": info.wait,
                "error.type": info.error,
            },
        )

    def on_scroll_resume(self, what: str) -> None:
        trace.get_current_span().add_event("asyncwifi.scroll.resume", {"asyncwifi.scroll": what})
        self.owner.resumes.add(1, {"asyncwifi.scroll": what, **self.server})

    def hooks(self) -> list[tuple[HookKind, Callable[..., Any]]]:
        return [
            ("call_scope", self.call),
            ("attempt_scope", self.attempt),
            ("request", self.on_request),
            ("response", self.on_response),
            ("retry", self.on_retry),
            ("scroll_resume", self.on_scroll_resume),
        ]


class Instrumentation:
    """What :func:`instrument` installed; ``uninstrument()`` (or ``with``) removes it."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider)
        meter = metrics.get_meter(SCOPE, __version__, meter_provider)
        self.requests = meter.create_counter(
            "asyncwifi.client.requests", "{request}", "Attempts sent, by method and status"
        )
        self.rate_limited = meter.create_counter(
            "asyncwifi.client.rate_limited", "{response}", "429 answers received"
        )
        self.wait = meter.create_histogram(
            "asyncwifi.scheduler.wait", "s", "Time an attempt waited for a scheduler slot"
        )
        self.duration = meter.create_histogram(
            "http.client.request.duration", "s", "Network time of an attempt"
        )
        self.resumes = meter.create_counter(
            "asyncwifi.scroll.resumes", "{resume}", "Expired scrolls resumed"
        )
        meter.create_observable_gauge(
            "asyncwifi.quota.remaining",
            [self._observe_quota],
            "{request}",
            "Requests left in the window, as last reported",
        )
        self._probes: list[_Probe] = []
        self._original_init: Callable[..., None] | None = None

    def _observe_quota(self, options: CallbackOptions) -> Iterable[Observation]:
        for probe in list(self._probes):
            for window, remaining in list(probe.quota.items()):
                yield Observation(remaining, {"asyncwifi.quota.window": window, **probe.server})

    def attach(self, client: Client) -> None:
        """Install the hooks on ``client`` (one instrumentation per client)."""
        if client in _probes:
            raise ConfigurationError("this client is instrumented already")
        probe = _Probe(self, client)
        # the client's public hooks; each returns its remover
        probe.removers = [client.add_hook(kind, callback) for kind, callback in probe.hooks()]
        _probes[client] = probe
        self._probes.append(probe)

    def _patch(self) -> None:
        if _global:
            raise ConfigurationError("every client is instrumented already: uninstrument first")
        original = Client.__init__
        owner = self

        @functools.wraps(original)
        def __init__(client: Client, *args: Any, **kwargs: Any) -> None:
            original(client, *args, **kwargs)
            owner.attach(client)

        Client.__init__ = __init__  # type: ignore[method-assign,assignment]
        self._original_init = original
        _global.append(self)

    def uninstrument(self) -> None:
        """Remove the hooks from every client this instrumented; new clients stay plain."""
        if self._original_init is not None:
            Client.__init__ = self._original_init  # type: ignore[method-assign]
            self._original_init = None
            _global.remove(self)
        for probe in self._probes:
            for remove in probe.removers:
                remove()
            client = probe.client()
            if client is not None:
                _probes.pop(client, None)
        self._probes.clear()

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.uninstrument()


def instrument(
    client: Client | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> Instrumentation:
    """Trace and measure ``client``, or every client created from now on when None.

    The providers default to OpenTelemetry's global ones. Returns the
    :class:`Instrumentation`; call its ``uninstrument()`` to remove it.
    """
    if client is not None and not isinstance(client, Client):
        raise ConfigurationError(f"instrument() takes an asyncwifi.Client, got {type(client)!r}")
    instrumentation = Instrumentation(tracer_provider, meter_provider)
    if client is None:
        instrumentation._patch()
    else:
        instrumentation.attach(client)
    return instrumentation
