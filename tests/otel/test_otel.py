"""OpenTelemetry instrumentation against the simulator, with the SDK's in-memory exporters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="the otel extra is absent: pip install asyncwifi[otel]"
)

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from asyncwifi import Client, Limit, Limits, RetryPolicy, ScaledClock, StreamOptions
from asyncwifi._transport import AiohttpTransport
from asyncwifi.errors import ConfigurationError
from asyncwifi.otel import instrument
from asyncwifi.testing import Simulator
from tests._recording import Recording
from tests._source import parse_source
from tests._virtualclock import VirtualClock

LOGIN = "/v1/sts/login/services"


@pytest.fixture
def otel() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader, dict[str, Any]]]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield spans, reader, {"tracer_provider": tracer_provider, "meter_provider": meter_provider}
    meter_provider.shutdown()
    tracer_provider.shutdown()


def _client(sim: Simulator, **options: Any) -> Client:
    options.setdefault("retry", RetryPolicy(backoff_base=0.05, backoff_max=0.5))
    return Client(
        sim.client_key,
        sim.client_secret,
        base_url=sim.base_url,
        allow_http=True,
        clock=sim.clock,
        organization=sim.organization,
        **options,
    )


def _metrics(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def _named(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def test_a_span_per_call_and_per_attempt_with_http_attributes(otel: Any) -> None:
    exporter, reader, providers = otel
    async with Simulator(clock=ScaledClock(100.0), hotspots=3) as sim:
        client = _client(sim)
        instrument(client, **providers)
        async with client as api:
            await api.hotspots.list()
            await api.segments.list()
    spans = exporter.get_finished_spans()
    calls = _named(spans, "asyncwifi GET") + _named(spans, "asyncwifi POST")
    attempts = [s for s in spans if s.name in ("GET", "POST")]
    waits = _named(spans, "asyncwifi.scheduler.wait")
    # the login, the hotspots, the segments: three calls, one attempt each, one wait each
    assert len(calls) == len(attempts) == len(waits) == 3 == sim.counters.requests
    by_id = {s.context.span_id: s for s in spans}
    for attempt in attempts:
        assert attempt.parent is not None
        assert by_id[attempt.parent.span_id] in calls
        attrs = attempt.attributes or {}
        assert attrs["http.response.status_code"] == 200
        assert attrs["server.address"] == "127.0.0.1"
        assert attrs["http.request.method"] in ("GET", "POST")
        assert str(attrs["url.path"]).startswith("/v")
        assert "?" not in str(attrs["url.path"])
        assert attrs["asyncwifi.quota.minute.remaining"] >= 0
        assert attrs["asyncwifi.quota.day.remaining"] > 0
    for wait in waits:
        assert wait.parent is not None
        assert by_id[wait.parent.span_id] in attempts
    # the login ran inside the first GET's attempt (it needed a token)
    login = next(s for s in calls if (s.attributes or {})["url.path"] == LOGIN)
    assert login.parent is not None
    assert by_id[login.parent.span_id] in attempts
    found = _metrics(reader)
    assert sum(p.value for p in found["asyncwifi.client.requests"]) == 3
    assert sum(p.count for p in found["asyncwifi.scheduler.wait"]) == 3
    windows = {
        p.attributes["asyncwifi.quota.window"]: p.value for p in found["asyncwifi.quota.remaining"]
    }
    assert set(windows) == {"minute", "day"}


async def test_a_429_wait_is_visible_and_nothing_secret_is_recorded(otel: Any) -> None:
    exporter, reader, providers = otel
    # time moves only by the client's own waits: the four calls meet the minute's limit of
    # three however slowly a loaded machine runs them (a scaled clock let them miss it)
    async with Simulator(clock=VirtualClock.stepping(), minute_limit=3, segments=2) as sim:
        recording = Recording(AiohttpTransport(sim.base_url))
        # the client believes there is no limit: the gateway's 429 is what stops it
        client = _client(sim, limits=Limits(minute=None, day=None), transport=recording)
        instrument(client, **providers)
        async with client as api:
            for _ in range(4):
                await api.segments.list()
    assert sim.counters.rate_limited >= 1
    spans = exporter.get_finished_spans()
    attempts = [s for s in spans if s.name == "GET"]
    refused = [s for s in attempts if (s.attributes or {}).get("http.response.status_code") == 429]
    assert len(refused) == sim.counters.rate_limited
    for span in refused:
        assert (span.attributes or {})["error.type"] == "429"
        assert any(e.name == "asyncwifi.rate_limited" for e in span.events)
    # the attempt after a 429 is a resend whose slot wait held the pause
    resent = [s for s in attempts if (s.attributes or {}).get("http.request.resend_count")]
    assert len(resent) == len(refused)
    assert all((s.attributes or {})["asyncwifi.scheduler.wait"] > 0 for s in resent)
    calls = _named(spans, "asyncwifi GET")
    retried = [c for c in calls if any(e.name == "asyncwifi.retry" for e in c.events)]
    assert len(retried) >= 1
    found = _metrics(reader)
    assert sum(p.value for p in found["asyncwifi.client.rate_limited"]) == sim.counters.rate_limited
    assert sum(p.value for p in found["asyncwifi.client.requests"]) == sim.counters.requests

    secrets = {sim.client_secret, *recording.tokens}
    assert recording.tokens
    texts: list[str] = []
    for span in spans:
        texts.append(span.name)
        texts.extend(f"{k}={v}" for k, v in (span.attributes or {}).items())
        for event in span.events:
            texts.append(event.name)
            texts.extend(f"{k}={v}" for k, v in (event.attributes or {}).items())
        texts.append(str(span.status.description))
    for points in found.values():
        for point in points:
            texts.extend(f"{k}={v}" for k, v in (point.attributes or {}).items())
    assert len(texts) > 50
    leaked = [t for t in texts for s in secrets if s in t]
    assert leaked == []


async def test_scroll_resumes_are_counted(otel: Any) -> None:
    _exporter, reader, providers = otel
    clock = ScaledClock(400.0)
    async with Simulator(clock=clock, events=1_500) as sim:
        client = _client(sim)
        instrument(client, **providers)
        async with client as api:
            stream = api.events.list(size=250, options=StreamOptions(max_buffered=2))
            async for _page in stream.pages():
                await clock.sleep(90.0)  # longer than the window: the scroll id lapses
    assert stream.resumes >= 1
    found = _metrics(reader)
    assert sum(p.value for p in found["asyncwifi.scroll.resumes"]) == stream.resumes


async def test_instrument_every_client_then_uninstrument(otel: Any) -> None:
    exporter, _reader, providers = otel
    async with Simulator(clock=ScaledClock(100.0)) as sim:
        instrumentation = instrument(**providers)
        try:
            with pytest.raises(ConfigurationError, match="already"):
                instrument(**providers)
            async with _client(sim) as api:
                await api.segments.list()
        finally:
            instrumentation.uninstrument()
        traced = len(exporter.get_finished_spans())
        assert traced == 6  # login and segments: a call, an attempt and a wait each
        async with _client(sim) as api:  # created after uninstrument: not traced
            await api.segments.list()
        assert len(exporter.get_finished_spans()) == traced
        client = _client(sim)
        with (
            instrument(client, **providers),
            pytest.raises(ConfigurationError, match="already"),
        ):
            instrument(client, **providers)
        async with client as api:  # uninstrumented on leaving the with block
            await api.segments.list()
        assert len(exporter.get_finished_spans()) == traced


async def test_failed_attempts_carry_their_error_and_unsent_ones_are_not_requests(
    otel: Any,
) -> None:
    from asyncwifi.errors import QuotaExhaustedError
    from asyncwifi.testing import Faults

    exporter, reader, providers = otel
    faults = Faults(seed=4, drop_rate=0.5, paths=("/v2/segments/*",))
    async with Simulator(clock=ScaledClock(100.0), faults=faults) as sim:
        day = Limits(minute=None, day=Limit(6, 86_400.0))
        client = _client(sim, limits=replace(day, on_exhausted="raise"))
        instrument(client, **providers)

        async def spend(api: Client) -> None:
            for _ in range(7):  # 1 login + 5 attempts at most: the 7th call cannot go
                await api.segments.list()

        async with client as api:
            with pytest.raises(QuotaExhaustedError):
                await spend(api)
    spans = exporter.get_finished_spans()
    attempts = [s for s in spans if s.name == "GET"]
    dropped = [s for s in attempts if "http.response.status_code" not in (s.attributes or {})]
    errors = {(s.attributes or {}).get("error.type") for s in dropped}
    assert "TransportError" in errors  # a dropped connection: no status, the exception's type
    assert "QuotaExhaustedError" in errors  # refused by the local scheduler: never sent
    found = _metrics(reader)
    sent = [s for s in spans if s.name in ("GET", "POST")]
    # every attempt that got a slot is a request; the one the scheduler refused is not
    assert sum(p.value for p in found["asyncwifi.client.requests"]) == len(sent) - 1
    failed_calls = [s for s in _named(spans, "asyncwifi GET") if not s.status.is_ok]
    assert [(s.attributes or {})["error.type"] for s in failed_calls] == ["QuotaExhaustedError"]


def test_instrumentation_uses_only_the_clients_public_hooks() -> None:
    # asyncwifi.otel is a user of the client like any other: Client.add_hook, nothing private
    import ast
    import inspect

    import asyncwifi.otel

    tree = parse_source(inspect.getsource(asyncwifi.otel))
    private = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and isinstance(node.value, ast.Name)
        and node.value.id == "client"
    }
    assert private == set()
