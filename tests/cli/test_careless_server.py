"""A server that is legal but not ours, or not there (issue 33, items 1 to 6, 9 and 14),
through the real ``asyncwifi`` command in a child process: the simulator behind the proxy
of ``tests/client/_other_server.py`` (served by this test's loop). What the command
writes is what the server served; a failure is one line, its status, no traceback."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import ScaledClock
from asyncwifi.cli import ExitCode
from asyncwifi.errors import NotFoundError
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import served
from tests._stopping import Child, pointed_at
from tests.cli.conftest import Result, one_clean_line, run_against
from tests.client._other_server import OtherServer, floats_for_ints
from tests.client._support import NO_LIMITS, client_for


def _sim(**options: Any) -> Simulator:
    options.setdefault("rate_limit_mode", "off")
    return Simulator(**options)


def _clean(result: Result) -> None:
    assert result.code == 0, result.err
    assert "Traceback" not in result.err + result.out


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


# -- 1. numbers written as floats ---------------------------------------------------------


async def test_1_counts_written_as_floats_export_every_record(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    async with (
        _sim(contacts=250) as sim,
        OtherServer(sim, rewrite=lambda _path, body: floats_for_ints(body)) as other,
    ):
        result = await run_against(other.base_url, sim, tmp_path, "contacts", "export",
                                   "--out", str(out), "--page-size", "100")  # fmt: skip
    _clean(result)
    assert len({c["cid"] for c in _records(out)}) == 250


# -- 2. a policy date as epoch seconds ------------------------------------------------------


async def test_2_a_policy_date_in_epoch_seconds_costs_no_contact(tmp_path: Path) -> None:
    def rewrite(path: str, body: Any) -> Any:
        for contact in body.get("customers", []):
            for policy in contact["policies"][:1]:
                moment = datetime.fromisoformat(policy["date"].replace("Z", "+00:00"))
                policy["date"] = moment.timestamp()
        return body

    out = tmp_path / "c.jsonl"
    async with _sim(contacts=120) as sim, OtherServer(sim, rewrite=rewrite) as other:
        result = await run_against(other.base_url, sim, tmp_path, "contacts", "export",
                                   "--out", str(out))  # fmt: skip
    _clean(result)
    got = _records(out)
    assert len(got) == 120
    assert all(isinstance(c["policies"][0]["date"], float) for c in got)  # as served


# -- 3. a server that repeats pages ---------------------------------------------------------


@pytest.mark.parametrize("how", ["replay", "ignore"])
async def test_3_a_scroll_that_repeats_pages_is_one_line(tmp_path: Path, how: str) -> None:
    out = tmp_path / "c.jsonl"
    async with _sim(contacts=250) as sim, OtherServer(sim, continuation=how) as other:
        result = await run_against(other.base_url, sim, tmp_path, "contacts", "export",
                                   "--out", str(out), "--page-size", "100")  # fmt: skip
        # the export restarts a lost scan a few times (its rule), then says so: no loop
        assert other.count("/customers") <= 10
    one_clean_line(result, ExitCode.FAILURE, "repeats pages")
    got = _records(out) if out.exists() else []
    assert len(got) == len({c["cid"] for c in got}) <= 100  # each once


# -- 4. a 200 that holds no contact (no command reads one contact: the SDK's call) ---------


async def test_4_a_body_without_a_contact_is_not_found_in_one_line() -> None:
    async with (
        _sim(contacts=5) as sim,
        OtherServer(sim, rewrite=lambda p, b: {"status": "OK"} if p.count("/") == 3 else b)
        as other,
    ):  # fmt: skip
        client = client_for(sim, other.base_url, limits=NO_LIMITS)
        async with client as api:  # fmt: skip
            with pytest.raises(NotFoundError) as caught:
                await api.contacts.get(sim.data.contacts[0]["cid"])
    assert "holds no contact" in str(caught.value)
    assert "\n" not in str(caught.value)


# -- 5. a 401 to a revoked token ------------------------------------------------------------


def _first_request_401(counter: list[int]) -> Callable[[str, int, dict[str, str]], int]:
    def status(path: str, code: int, headers: dict[str, str]) -> int:
        if path.startswith("/v1/sts/login"):
            return code
        counter.append(1)
        return 401 if len(counter) == 1 else code  # the token revoked once, at the start

    return status


async def test_5_a_401_to_a_revoked_token_logs_in_again_and_goes_on(tmp_path: Path) -> None:
    async with _sim(contacts=5) as sim, OtherServer(sim, status=_first_request_401([])) as other:
        result = await run_against(other.base_url, sim, tmp_path, "segments", "list")
        assert other.count("/v1/sts/login") == 2  # one new login, never a loop
    _clean(result)
    assert len(result.out.strip().splitlines()) >= len(sim.data.segments)


async def test_5_a_refused_login_is_the_keys_fault_exit_78(tmp_path: Path) -> None:
    async with _sim(contacts=5) as sim, OtherServer(sim) as other:
        sim_wrong = type("Sim", (), {"client_key": sim.client_key, "client_secret": "nope",
                                     "organization": sim.organization})()  # fmt: skip
        result = await run_against(other.base_url, sim_wrong, tmp_path, "segments", "list")
        assert other.count("/v1/sts/login") == 1
    line = one_clean_line(result, ExitCode.CONFIG, "refused the credentials")
    assert "nope" not in line


# -- 6. the sync stores each contact as the API serves it -----------------------------------


async def test_6_a_synced_contact_is_the_contact_as_served(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with _sim(contacts=40, events=50) as sim, OtherServer(sim) as other:
        result = await run_against(other.base_url, sim, tmp_path, "sync", "--once",
                                   "--to", f"sqlite:///{db}")  # fmt: skip
    _clean(result)
    with sqlite3.connect(db) as conn:
        raws = {r[0]: json.loads(r[1]) for r in conn.execute("SELECT id, raw FROM contacts")}
    assert len(raws) == 40
    contact = sim.data.contacts[7]
    assert raws[contact["cid"]] == served(contact)  # no null where spec §2.1 says string


# -- 9. a wrong base URL at the first login --------------------------------------------------


async def test_9_a_base_url_where_nothing_listens_is_one_line_exit_78(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    async with _sim(contacts=5) as sim:
        result = await run_against(url, sim, tmp_path, "segments", "list")
    one_clean_line(result, ExitCode.CONFIG, url, "ASYNCWIFI_BASE_URL")


# -- 14. a fresh process asks what its key spent before it bursts ---------------------------


def _login_without_limit_headers(path: str, code: int, headers: dict[str, str]) -> int:
    """A gateway whose login route has no rate-limit plugin: its answer says nothing of
    what the key spent (the minute's count is the API routes')."""
    if path.startswith("/v1/sts/login"):
        for name in [k for k in headers if "ratelimit" in k.lower()]:
            del headers[name]
    return code


async def test_14_a_fresh_process_with_few_requests_left_this_minute_gets_no_429(
    tmp_path: Path,
) -> None:
    """Another process spent 58 of the key's 60 requests this minute; a backfill on 16
    streams starts (its login the 59th): it must ask first (one request, the last one
    left), then wait, not burst 16 requests into the one left."""
    out = tmp_path / "e.jsonl"
    async with (
        _sim(events=3_000, rate_limit_mode="sliding", clock=ScaledClock(1.0)) as sim,
        OtherServer(sim, status=_login_without_limit_headers) as other,
    ):
        spender = client_for(sim, limits=NO_LIMITS)
        async with spender as api:  # fmt: skip
            for _ in range(57):  # with its login: 58 of the minute's 60
                await api.segments.list()
        env = pointed_at(sim, tmp_path) | {"ASYNCWIFI_BASE_URL": other.base_url}
        args = ["events", "backfill", "--since", "2026-01-01", "--until", "2026-12-01",
                "--out", str(out), "--concurrency", "16", "--page-size", "10"]  # fmt: skip
        async with Child(args, env=env):
            # until the minute is used up (then it waits) and a little more, or a 429
            full = None
            for _ in range(200):
                await asyncio.sleep(0.05)
                if sim.counters.rate_limited or (full and time.monotonic() - full > 1.5):
                    break
                if full is None and sim.counters.admitted >= 60:
                    full = time.monotonic()
        assert sim.counters.admitted >= 58  # the command did start sending
        assert sim.counters.rate_limited == 0  # it asked first, then waited
