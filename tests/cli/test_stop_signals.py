"""``asyncwifi events backfill`` and ``contacts export`` stopped by SIGTERM or SIGINT in
their waits: the day's quota spent (``--daemon`` waits for the reset) and a request in
backoff. The real command runs in a child process and says it is in the wait; the signal
must end it within seconds with the documented 130, its progress committed whole: the
output holds exactly the records the state file counts, each once."""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from pathlib import Path

from asyncwifi.cli import ExitCode
from asyncwifi.engine._jsonl import JsonlDestination
from asyncwifi.testing import Faults, Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests._stopping import STOP_WITHIN, Child, Stopped, pointed_at

#: the simulated clock starts at noon: the day's quota is back only 12 h (216 s) later
START = datetime(2026, 1, 10, 12, tzinfo=UTC).timestamp()
SIMULATE = ["--simulate", "--sim-speed", "200", "--sim-seed", "5", "--sim-start", str(START)]


def _interrupted(stopped: Stopped) -> None:
    assert stopped.code == ExitCode.INTERRUPTED, stopped.err
    assert stopped.seconds < STOP_WITHIN, stopped
    assert "asyncwifi: error: interrupted" in stopped.err
    assert "Traceback" not in stopped.err


def _whole(out: Path) -> int:
    """The output is exactly what the state committed: its length, its records, each once."""
    info = JsonlDestination.read_only(out.with_name(out.name + ".state"))
    data = out.read_bytes()
    assert info.offset == len(data)
    lines = data.splitlines()
    assert len(lines) == info.records
    assert len(set(lines)) == len(lines)
    return len(lines)


async def test_backfill_sigterm_while_it_waits_for_the_quota(tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    args = [*SIMULATE, "--sim-day-limit", "4", "--sim-events-per-day", "2000",
            "events", "backfill", "--since", "2026-01-01", "--until", "2026-01-06",
            "--out", str(out), "--page-size", "500", "--wait"]  # fmt: skip
    async with Child(args) as child:
        await child.reach("the day's quota is spent; progress is saved")
        assert "waiting until" in child.lines[-1]
        stopped = await child.stop(signal.SIGTERM)
    _interrupted(stopped)
    assert _whole(out) > 0


async def test_contacts_export_sigterm_while_it_waits_for_the_quota(tmp_path: Path) -> None:
    out = tmp_path / "contacts.jsonl"
    args = [*SIMULATE, "--sim-day-limit", "3", "contacts", "export", "--out", str(out),
            "--page-size", "500", "--wait"]  # fmt: skip
    async with Child(args) as child:
        await child.reach("the day's quota is spent; progress is saved")
        stopped = await child.stop(signal.SIGTERM)
    _interrupted(stopped)
    assert _whole(out) == 1_000


async def test_backfill_sigint_while_a_request_is_in_backoff(tmp_path: Path) -> None:
    """Every events request fails with a 5xx; the client backs off; SIGINT."""
    out = tmp_path / "events.jsonl"
    faults = Faults(error_rate=1.0, paths=("*/events",))
    async with Simulator(seed=5, events=1_000, faults=faults) as sim:
        since, until = (
            datetime.fromtimestamp(t, UTC).isoformat()
            for t in (DEFAULT_EVENTS_START, DEFAULT_EVENTS_END)
        )
        args = ["events", "backfill", "--since", since, "--until", until, "--out", str(out)]
        async with Child(args, env=pointed_at(sim, tmp_path)) as child:
            await child.reach("retry 1 in")
            stopped = await child.stop(signal.SIGINT)
    _interrupted(stopped)
    assert "retry 3 in" not in stopped.err
    # a new job stopped before its first commit leaves no file behind
    assert not out.exists()
    assert not out.with_name(out.name + ".state").exists()
