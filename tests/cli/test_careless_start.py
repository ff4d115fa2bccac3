"""A base URL that is wrong in the ways an operator gets it wrong (issue 40), through the real
``asyncwifi`` command in a child process: a host that takes the connection and never
answers, a path that doubles the API's version, a path with no login route, a proxy's page
where a list should be. Each is one line naming the URL (and the setting that gave it),
exit 78 (a setting to fix) or 1, at once: within one timeout per login attempt."""

from __future__ import annotations

import time
from pathlib import Path

from aiohttp import web

from asyncwifi.cli import ExitCode
from asyncwifi.testing import Simulator
from tests.cli.conftest import one_clean_line, run_against
from tests.client._other_server import OtherServer, SilentServer


def _sim() -> Simulator:
    return Simulator(rate_limit_mode="off", contacts=5)


async def test_a_host_that_never_answers_fails_after_two_timeouts(tmp_path: Path) -> None:
    """Was 10 logins of 30 s each (5 min 15 s), then a line naming neither the URL nor
    ASYNCWIFI_BASE_URL, exit 1."""
    async with _sim() as sim, SilentServer() as silent:
        started = time.monotonic()
        result = await run_against(silent.base_url, sim, tmp_path, "segments", "list",
                                   more_env={"ASYNCWIFI_TIMEOUT": "0.5"})  # fmt: skip
        seconds = time.monotonic() - started
        assert silent.accepted == 2  # one login, two attempts; nothing else was sent
    line = one_clean_line(result, ExitCode.CONFIG, silent.base_url, "ASYNCWIFI_BASE_URL")
    assert "no answer" in line
    assert seconds < 30  # two timeouts of 0.5 s and the start-up, even on a busy machine


async def test_a_bad_timeout_setting_is_one_line_before_anything_is_sent(tmp_path: Path) -> None:
    async with _sim() as sim:
        result = await run_against(sim.base_url, sim, tmp_path, "segments", "list",
                                   more_env={"ASYNCWIFI_TIMEOUT": "soon"})  # fmt: skip
        assert sim.counters.requests == 0
    one_clean_line(result, ExitCode.CONFIG, "ASYNCWIFI_TIMEOUT", "number of seconds")


async def test_a_base_url_ending_with_the_version_is_refused_before_any_request(
    tmp_path: Path,
) -> None:
    """Was a 404 naming no setting, exit 1."""
    async with _sim() as sim:
        url = sim.base_url + "/api/v1/"
        result = await run_against(url, sim, tmp_path, "segments", "list")
        assert sim.counters.requests == 0
    line = one_clean_line(result, ExitCode.CONFIG, url, "ASYNCWIFI_BASE_URL")
    assert "ends with the API's version (/api/v1/)" in line


async def test_a_base_url_whose_path_has_no_login_route_says_so(tmp_path: Path) -> None:
    async with _sim() as sim:
        url = sim.base_url + "/api"
        result = await run_against(url, sim, tmp_path, "segments", "list")
        assert sim.counters.requests == 1  # the login, once: a 404 is not retried
    one_clean_line(result, ExitCode.CONFIG, f"{url} has no login route", "404",
                   "it has a path (/api)", "ASYNCWIFI_BASE_URL")  # fmt: skip


def _portal(path: str) -> web.Response | None:
    """A proxy's sign-in page where the API's lists should be (the login passes through)."""
    if "/segments/" not in path and "/customers" not in path:
        return None
    return web.Response(body=b"<html><title>Sign in</title></html>", content_type="text/html")


async def test_a_list_answered_in_html_names_the_type_and_the_url(tmp_path: Path) -> None:
    """Was "cannot decode segment page: JSON is malformed: invalid character (byte 0)"
    after four retries."""
    async with _sim() as sim, OtherServer(sim, answer=_portal) as other:
        result = await run_against(other.base_url, sim, tmp_path, "segments", "list")
        assert other.count("/segments/") == 1  # not read again: the page is what it meant
    path = f"/v2/segments/organizations/{sim.organization}"
    one_clean_line(result, ExitCode.FAILURE, f"GET {other.base_url}{path}",
                   "with text/html, not JSON (a proxy or a wrong base URL?)")  # fmt: skip


async def test_a_backfill_whose_base_url_refuses_is_one_line_from_its_four_slices(
    tmp_path: Path,
) -> None:
    """Four slices fail on the one login: the first's error is the line; the others, cut
    short, once printed 'Task exception was never retrieved' with two tracebacks each."""
    async with _sim() as sim:
        url = "http://127.0.0.1:1"  # nothing listens there: refused at once
        result = await run_against(url, sim, tmp_path, "events", "backfill", "--since",
                                   "2024-01-01", "--until", "2024-01-02", "--out",
                                   str(tmp_path / "events.jsonl"))  # fmt: skip
    one_clean_line(result, ExitCode.CONFIG, url, "ASYNCWIFI_BASE_URL")
