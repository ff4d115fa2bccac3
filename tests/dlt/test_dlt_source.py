"""The dlt source against the simulator, into DuckDB: two runs, only new data the second time
(and the lookback's re-read of the recent past, a no-op in the tables)."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

dlt = pytest.importorskip("dlt", reason="the dlt extra is absent: pip install asyncwifi[dlt]")
duckdb = pytest.importorskip("duckdb", reason="dlt[duckdb] is not installed")

from asyncwifi import Client, ClientState, ScaledClock  # noqa: E402
from asyncwifi.dlt import asyncwifi_source  # noqa: E402
from asyncwifi.errors import ConfigurationError, ValidationError  # noqa: E402
from asyncwifi.testing import Simulator  # noqa: E402
from tests.dlt.conftest import count, pipeline, run  # noqa: E402

START = datetime(2024, 1, 1, tzinfo=UTC)
MIDDLE = datetime(2024, 1, 15, tzinfo=UTC)
END = datetime(2024, 1, 31, 23, 59, 59, tzinfo=UTC)
LOOKBACK = timedelta(minutes=10)  # the source's default, the sync's
SHAPES = (
    ("nested", "flat")  # with a UTC time, and without one (the range fallback)
    if "event_shape" in inspect.signature(Simulator).parameters
    else ("default",)
)


def _events_between(sim: Simulator, start: datetime, end: datetime, *, closed: bool = True) -> int:
    """The simulator's events from ``start`` to ``end`` (included unless not ``closed``)."""
    low, high = start.timestamp(), end.timestamp()
    return sum(1 for t in sim.data.events.times if low <= t < high or (closed and t == high))


def _sim(shape: str) -> Simulator:
    options: dict[str, Any] = {} if shape == "default" else {"event_shape": shape}
    return Simulator(
        clock=ScaledClock(100.0), contacts=40, hotspots=5, segments=3, events=400, **options
    )


@pytest.mark.parametrize("shape", SHAPES)
async def test_two_runs_load_everything_once_and_only_new_data_the_second_time(
    dlt_home: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    async with _sim(shape) as sim:
        target = pipeline(dlt_home)
        # run 1: credentials through dlt's conventions (SOURCES__ASYNCWIFI__*)
        monkeypatch.setenv("SOURCES__ASYNCWIFI__CLIENT_KEY", sim.client_key)
        monkeypatch.setenv("SOURCES__ASYNCWIFI__CLIENT_SECRET", sim.client_secret)
        first = asyncwifi_source(
            base_url=sim.base_url,
            organization=sim.organization,
            allow_http=True,
            clock=sim.clock,
            date_start=START,
            date_end=MIDDLE,
            events_page_size=60,
            contacts_page_size=15,
        )
        await run(target, first)
        assert sim.counters.logins == 1  # one client for the four resources
        first_half = _events_between(sim, START, MIDDLE)
        assert 0 < first_half < 400
        assert count(dlt_home, "select count(*) from wifi.events") == first_half
        assert count(dlt_home, "select count(*) from wifi.contacts") == 40
        assert count(dlt_home, "select count(*) from wifi.hotspots") == 5
        assert count(dlt_home, "select count(*) from wifi.segments") == 3
        # the record kept whole: contacts' policies became a child table
        policies = sum(len(c["policies"]) for c in sim.data.contacts)
        assert count(dlt_home, "select count(*) from wifi.contacts__policies") == policies

        # between the runs: one contact changes on the server
        changed = sim.data.contacts[7]["cid"]
        async with sim.client() as api:
            await api.contacts.update_policies(
                changed, [{"name": "mktgCommunications", "accepted": False}]
            )
        logins = sim.counters.logins
        events_requests = sim.counters.by_endpoint["GET /v1/organizations/{cid}/events"]

        # run 2: a given Client; the range widened to the end of the month
        client = sim.client()
        second = asyncwifi_source(
            client, date_start=START, date_end=END, events_page_size=60, contacts_page_size=15
        )
        loaded = await run(target, second)
        assert client.state is ClientState.CLOSED  # the source opened it, so it closed it
        assert sim.counters.logins == logins + 1
        # the new events only: the first run read the 10 minutes before its end long after
        # their time (a lookback old), so no re-read of them is due (spec §8: each record
        # read again would be an object spent again)
        second_half = _events_between(sim, MIDDLE, END, closed=False)
        assert _events_between(sim, MIDDLE - LOOKBACK, MIDDLE, closed=False) > 0
        assert loaded["events"] == second_half
        # the second run started at MIDDLE: its pages cover the new events only, plus the
        # feed's first window (a day, until it knows the shape: one short page), and an
        # empty last page unless a short page showed the end
        pages = sim.counters.by_endpoint["GET /v1/organizations/{cid}/events"] - events_requests
        full = -(-second_half // 60)
        assert full <= pages <= full + 2
        assert loaded.get("contacts", 0) == 1  # the one modified contact
        assert count(dlt_home, "select count(*) from wifi.events") == len(sim.data.events.times)
        assert count(dlt_home, "select count(distinct id) from wifi.events") == len(
            sim.data.events.times
        )
        assert count(dlt_home, "select count(*) from wifi.contacts") == 40
        assert count(dlt_home, "select count(*) from wifi.hotspots") == 5
        assert count(dlt_home, "select count(*) from wifi.segments") == 3
        mktg = count(
            dlt_home,
            "select count(*) from wifi.contacts__policies p join wifi.contacts c "
            f"on p._dlt_parent_id = c._dlt_id where c.cid = '{changed}' "
            "and p.name = 'mktgCommunications' and not p.accepted",
        )
        assert mktg == 1  # merged: the changed contact's new policy replaced the old one


async def test_credentials_from_asyncwifi_environment(
    dlt_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Simulator(clock=ScaledClock(100.0), contacts=5, events=20, hotspots=2) as sim:
        monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", sim.client_key)
        monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", sim.client_secret)
        monkeypatch.setenv("ASYNCWIFI_BASE_URL", sim.base_url)
        monkeypatch.setenv("ASYNCWIFI_ORGANIZATION", sim.organization)
        monkeypatch.setenv("ASYNCWIFI_ALLOW_HTTP", "1")  # as ``asyncwifi simulate`` exports it
        source = asyncwifi_source(clock=sim.clock).with_resources("hotspots")
        await run(pipeline(dlt_home), source)
        assert count(dlt_home, "select count(*) from wifi.hotspots") == 2
        assert sim.counters.by_endpoint.total() == 2  # the login and one list: nothing else


def test_bad_input_fails_before_any_request(dlt_home: Path) -> None:
    with pytest.raises(ConfigurationError, match="client_key and client_secret"):
        asyncwifi_source(base_url="https://example.invalid")
    with pytest.raises(ValidationError, match="no time zone"):
        asyncwifi_source(client_key="k", client_secret="s", date_start=datetime(2024, 1, 1))
    client = Client("key", "secret", base_url="https://example.invalid")
    with pytest.raises(ConfigurationError, match="not both"):
        asyncwifi_source(client, base_url="https://example.invalid")
    with pytest.raises(ValidationError, match="after"):
        asyncwifi_source(client, date_start=END, date_end=START)
    with pytest.raises(ValidationError, match="contacts_page_size must be 'max' or"):
        asyncwifi_source(client, contacts_page_size=20_000)
    with pytest.raises(ValidationError, match="lookback must be from 0"):
        asyncwifi_source(client, lookback=-1)


async def test_the_events_first_run_needs_a_date_start(dlt_home: Path) -> None:
    # where the history starts costs requests: the user says, before any is sent
    async with Simulator(clock=ScaledClock(100.0), events=20) as sim:
        from dlt.pipeline.exceptions import PipelineStepFailed

        source = asyncwifi_source(sim.client()).with_resources("events")
        with pytest.raises(PipelineStepFailed, match="needs date_start"):
            await run(pipeline(dlt_home), source)
        assert sim.counters.by_endpoint.total() == 0


async def test_contacts_load_from_a_server_that_caps_their_pages(dlt_home: Path) -> None:
    # the reference shows pages of 100; the source asks for the largest accepted, learnt
    async with Simulator(clock=ScaledClock(100.0), contacts=250, contacts_max_size=100) as sim:
        source = asyncwifi_source(sim.client()).with_resources("contacts")
        await run(pipeline(dlt_home), source)
        assert count(dlt_home, "select count(distinct cid) from wifi.contacts") == 250
        assert sim.counters.responses_by_status[409] == 2  # 10,000 and 1,000, once each


async def test_a_failing_resource_fails_the_run_and_closes_the_client(dlt_home: Path) -> None:
    # segments answer 410 Gone (spec §9): the extraction fails, the client is not left open
    async with Simulator(
        clock=ScaledClock(100.0), events=3_000, contacts=40, gone_paths=("/v2/segments/*",)
    ) as sim:
        client = sim.client()
        source = asyncwifi_source(client, date_start=START, events_page_size=100)
        from dlt.pipeline.exceptions import PipelineStepFailed

        with pytest.raises(PipelineStepFailed, match=r"Gone|410"):
            await run(pipeline(dlt_home), source)
        assert client.state is ClientState.CLOSED


async def test_a_failure_before_the_other_resources_start_still_closes_the_client() -> None:
    # dlt closes a resource's generator that never started without running its finally:
    # one failing before the others had begun left the client open (seen under load)
    from asyncwifi.dlt import _Session

    async with Simulator(clock=ScaledClock(100.0)) as sim:
        client = sim.client()
        session = _Session(client)
        for _ in range(3):  # events, contacts, segments selected
            session.register()
        assert await session.acquire() is client
        await session.release(failed=True)
        assert client.state is ClientState.CLOSED
        assert session.failed  # the others' errors of the closed client are not the run's
        # a resource that ends well leaves the client to those still to come
        other = sim.client()
        session = _Session(other)
        session.register()
        session.register()
        await session.acquire()
        await session.release()
        assert other.state is ClientState.OPEN
        await session.acquire()
        await session.release()
        assert other.state is ClientState.CLOSED
