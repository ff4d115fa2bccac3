"""The road from ``asyncwifi simulate`` to one's own code: one plain-http switch honoured
everywhere, a banner that says which events are served, ``sim.client()``, and a backfill
of an empty range that says so."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from asyncwifi import Client
from asyncwifi.cli import ExitCode
from asyncwifi.errors import ConfigurationError, NotFoundError
from asyncwifi.testing import Simulator, SimulatorProcess
from asyncwifi.testing._process import serve_forever
from tests.cli.conftest import Result
from tests.cli.test_cli_errors import one_line_error


@pytest.fixture(scope="module")
def served() -> Iterator[SimulatorProcess]:
    """``asyncwifi simulate`` in a child process, with its default (January 2024) events."""
    with SimulatorProcess(speed=100, events=2_000) as proc:
        yield proc


@pytest.fixture
def pointed_at(
    served: SimulatorProcess, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> SimulatorProcess:
    """The environment the simulator's banner tells a user to export."""
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", served.base_url)
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", served.client_key)
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", served.client_secret)
    monkeypatch.setenv("ASYNCWIFI_ORGANIZATION", served.organization)
    monkeypatch.setenv("ASYNCWIFI_ALLOW_HTTP", "1")
    return served


async def test_from_env_honours_the_documented_switch(
    pointed_at: SimulatorProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Client.from_env() as api:
        segments = await api.segments.list()
    assert segments
    monkeypatch.delenv("ASYNCWIFI_ALLOW_HTTP")
    with pytest.raises(ConfigurationError) as refused:
        Client.from_env()
    assert "ASYNCWIFI_ALLOW_HTTP=1" in str(refused.value)
    monkeypatch.setenv("ASYNCWIFI_ALLOW_HTTP", "0")
    with pytest.raises(ConfigurationError):
        Client.from_env()
    # the keyword still wins over the environment
    Client.from_env(allow_http=True)


def test_python_users_are_told_the_python_switch() -> None:
    with pytest.raises(ConfigurationError) as refused:
        Client("k", "s", base_url="http://127.0.0.1:9")
    assert "allow_http=True" in str(refused.value)
    assert "--allow-http" not in str(refused.value)


def test_the_cli_works_with_the_exported_environment(
    pointed_at: SimulatorProcess, run: Callable[..., Result]
) -> None:
    result = run("-q", "segments", "list")
    assert result.code == 0, result.err


def test_a_backfill_of_a_range_without_events_warns(
    pointed_at: SimulatorProcess, run: Callable[..., Result], clean_env: Path
) -> None:
    result = run("-q", "events", "backfill", "--since", "2026-01-01", "--until", "2026-01-02",
                 "--out", "e.jsonl")  # fmt: skip
    assert result.code == 0, result.err
    assert "asyncwifi: warning: no event at all from 2026-01-01" in result.err
    inside = run("-q", "events", "backfill", "--since", "2024-01-01", "--until", "2024-01-02",
                 "--out", "in.jsonl")  # fmt: skip
    assert inside.code == 0, inside.err
    assert "warning" not in inside.err
    assert (clean_env / "in.jsonl").stat().st_size > 0


async def test_the_banner_shows_the_event_range_and_what_to_export() -> None:
    out = io.StringIO()
    task = asyncio.ensure_future(
        serve_forever(
            port=0, out=out, events=100, events_start="2025-03-01", events_end="2025-04-01"
        )
    )
    try:
        for _ in range(500):
            if "Ctrl+C" in out.getvalue():
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    text = out.getvalue()
    assert "100 events from 2025-03-01T00:00:00Z to 2025-04-01T00:00:00Z" in text
    assert "ASYNCWIFI_ALLOW_HTTP=1" in text
    assert "--since 2025-03-01 --until 2025-04-01" in text


def test_simulate_help_shows_the_default_range_and_the_flags(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("simulate", "--help")
    assert result.code == 0
    assert "2024-01-01 to 2024-01-31" in result.out
    for flag in ("--events-start", "--events-end", "--events"):
        assert flag in result.out
    bad = run("simulate", "--events-start", "2024-02-01", "--events-end", "2024-01-01")
    assert bad.code == ExitCode.USAGE
    assert "--events-start" in one_line_error(bad)


async def test_sim_client_is_configured_for_the_running_simulator() -> None:
    async with Simulator(events=500) as sim, sim.client() as api:
        ids = [event.id async for event in api.events.list()]
        assert api.scheduler is not None
    assert ids == sim.data.event_ids()


async def test_every_404_carries_its_own_request_id() -> None:
    request_ids = []
    for _ in range(2):
        async with Simulator(seed=1) as sim, sim.client() as api:
            for _ in range(2):
                with pytest.raises(NotFoundError) as missing:
                    await api.hotspots.get("no-such-hotspot")
                request_ids.append(missing.value.request_id)
    assert all(request_ids)
    assert len(set(request_ids)) == 4


def test_the_main_jobs_outputs_are_ignored_by_git() -> None:
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    names = ["events.jsonl", "events.jsonl.state", "events.jsonl.state-wal", "contacts.jsonl"]
    proc = subprocess.run(
        ["git", "check-ignore", *names], cwd=root, capture_output=True, text=True, check=False
    )
    assert proc.stdout.split() == names


def test_a_backfill_at_the_edges_of_the_calendar_runs_or_says_why_not(
    pointed_at: SimulatorProcess, run: Callable[..., Result]
) -> None:
    result = run("-q", "events", "backfill", "--since", "0001-01-01", "--until", "0001-01-03",
                 "--out", "e.jsonl")  # fmt: skip
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    assert "no event at all" in result.err
    # the far end is the future: refused before any request, in one line
    result = run("-q", "events", "backfill", "--since", "9999-12-30",
                 "--until", "9999-12-31T23:59:59.999", "--out", "f.jsonl")  # fmt: skip
    assert result.code == ExitCode.USAGE
    assert "Traceback" not in result.err
    assert "is in the future" in result.err
    assert not (Path.cwd() / "f.jsonl").exists()
