"""The simulator in a separate process, sharing the parent's scaled clock."""

from __future__ import annotations

import aiohttp

from asyncwifi._clock import ScaledClock
from asyncwifi.testing import Faults
from asyncwifi.testing._process import AnchoredClock, SimulatorProcess
from asyncwifi.testing._util import parse_instant


async def test_a_simulator_process_serves_and_reports() -> None:
    clock = ScaledClock(speed=100)
    async with (
        SimulatorProcess(clock=clock, events=2000, minute_limit=30, seed=3) as proc,
        aiohttp.ClientSession() as session,
    ):
        assert proc.base_url.startswith("http://127.0.0.1:")
        assert proc.info["limits"] == {"minute": 30, "day": 15_000}
        login = await session.post(
            proc.base_url + "/v1/sts/login/services",
            json={"clientKey": proc.client_key, "clientSecret": proc.client_secret},
        )
        async with login:
            assert login.status == 200
            assert login.headers["X-RateLimit-Limit-Minute"] == "30"
            token = (await login.json())["token"]
        url = f"{proc.base_url}/v1/organizations/{proc.organization}/events"
        headers = {"Authorization": f"Bearer {token}"}
        sent = clock.now()
        async with session.get(url, params={"size": "5"}, headers=headers) as resp:
            body = await resp.json()
        received = clock.now()
        assert body["count"] == 5
        # the child's clock is the parent's time line: its stamp falls between ours
        generated = parse_instant(body["generated"], "generated")
        assert sent - 0.5 <= generated <= received + 0.5
        await proc.set_faults(Faults(error_rate=1.0))
        async with session.get(url, headers=headers) as resp:
            assert resp.status >= 500
        counters = await proc.counters()
        assert counters["admitted"] == 3
        assert counters["logins"] == 1
    assert proc.pid is None


def test_the_command_line_options() -> None:
    """The child's command line is ``asyncwifi simulate``'s: every flag it builds parses."""
    from asyncwifi.cli._simulator_command import simulate_command

    proc = SimulatorProcess(
        speed=100,
        rate_limit_mode="sliding",
        object_limits={"hotspots": 5},
        gone_paths=["/v9/*"],
        faults=Faults(error_rate=0.5),
        count_refused=True,
        events_start="2025-01-01",
    )
    assert proc.command()[1:4] == ["-m", "asyncwifi.cli", "simulate"]  # never testing -> cli
    args = proc.command()[4:]
    ctx = simulate_command.make_context("simulate", args)
    params = ctx.params
    assert params["port"] == 0
    assert params["speed"] == 100.0
    assert params["rate_limit_mode"] == "sliding"
    assert params["object_limits"] == {"hotspots": 5}
    assert params["gone_path"] == ("/v9/*",)
    assert params["faults"] == Faults(error_rate=0.5)
    assert params["count_refused"] is True
    assert params["events_start"] == 1_735_689_600.0
    assert params["fractional_reset"] is False  # as Simulator's default, whatever the speed
    fractional = SimulatorProcess(speed=100, fractional_reset=True).command()[4:]
    assert simulate_command.make_context("simulate", fractional).params["fractional_reset"]
    speed, start, anchor = AnchoredClock.describe(ScaledClock(50, start=1000.0))
    shared = AnchoredClock(speed, start, anchor)
    assert speed == 50
    assert abs(shared.now() - start) < 1.0
