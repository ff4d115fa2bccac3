"""Events backfills over real HTTP against the simulator, on every record shape (issue 13):
exactly once, early-expiring scroll ids, and kill -9 then resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import ScaledClock
from asyncwifi.backfill import SliceIncompleteError, events_backfill
from asyncwifi.backfill._plan import estimate, even_slice_size, plan_slices
from asyncwifi.engine._jsonl import JsonlDestination
from asyncwifi.testing import Simulator, SimulatorProcess
from tests.client._support import NO_LIMITS, client_for

SINCE = datetime(2024, 1, 1, tzinfo=UTC)
UNTIL = datetime(2024, 1, 3, tzinfo=UTC)
SHAPES = ("nested", "flat", "dated")


def ids_in(path: Path) -> Counter[str]:
    records = (json.loads(line) for line in path.read_bytes().splitlines())
    return Counter(r["event"]["id"] if "event" in r else r["id"] for r in records)


def expected(sim_data: Any) -> Counter[str]:
    return Counter(sim_data.event_ids(SINCE, UNTIL - timedelta(milliseconds=1)))


def sim(shape: str, **options: Any) -> Simulator:
    options.setdefault("clock", ScaledClock(400.0))
    options.setdefault("events", 6_000)
    return Simulator(
        events_start=SINCE,
        events_end=SINCE + timedelta(days=3),
        event_shape=shape,
        rate_limit_mode="off",
        **options,
    )


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_backfill_writes_every_event_once_on_every_shape(
    tmp_path: Path, shape: str
) -> None:
    # 40x, not 400x: a scroll id then lives 1.5 real seconds, so no lapse (and no resume
    # paid for it) can come from a loaded machine's lag; nothing here waits on the clock
    server = sim(shape, clock=ScaledClock(40.0))
    async with server, client_for(server, limits=NO_LIMITS) as api:
        out = tmp_path / "events.jsonl"
        job = events_backfill(
            api,
            since=SINCE,
            until=UNTIL,
            out=out,
            state=tmp_path / "state",
            slice_size=timedelta(hours=12),
            page_size=300,
        )
        outcome = await job.run()
        assert outcome.status == "done"
        assert ids_in(out) == expected(server.data)
    spent = outcome.progress.requests_run
    counters = server.counters
    assert spent == counters.requests - counters.logins  # what the server saw
    per_slice = _per_slice(server)
    # DESIGN "The request floor": every page of 300, plus one closing request per scroll
    floor = -(-sum(per_slice) // 300) + len(per_slice)
    # + one per scroll at most: a page cut in two at a slice boundary, or a full last page
    # proved by a resume (two requests where the floor counts one closing request)
    assert spent <= floor + len(per_slice)
    # here no slice ends on a full page: each end is proved by its short last page, so
    # exactly one request per page and no resume (none lapsed)
    assert all(n % 300 for n in per_slice)
    assert spent == sum(-(-n // 300) for n in per_slice)
    assert counters.expired_scroll_hits == 0


def _per_slice(server: Simulator) -> list[int]:
    step = timedelta(hours=12)
    return [
        len(
            server.data.event_ids(
                SINCE + k * step, SINCE + (k + 1) * step - timedelta(milliseconds=1)
            )
        )
        for k in range(4)
    ]


@pytest.mark.parametrize(
    ("shape", "events"), [("nested", 6_000), ("dated", 6_000), ("flat", 6_000), ("flat", 80_000)]
)
async def test_ids_expiring_after_a_millisecond_never_end_a_backfill_done_with_events_missing(
    tmp_path: Path, shape: str, events: int
) -> None:
    server = sim(shape, scroll_ttl=0.001, events=events)
    async with server, client_for(server, limits=NO_LIMITS) as api:
        out, state = tmp_path / "events.jsonl", tmp_path / "state"

        def job() -> Any:
            return events_backfill(
                api,
                since=SINCE,
                until=UNTIL,
                out=out,
                state=state,
                slice_size=timedelta(hours=12),
                page_size=300,
            )

        if events > 60_000:  # slices of 12 h hold more than 10,000 events each
            # flat records (no time) and slices of more than 10,000 events whose ids die
            # at once: no re-scan gets past its first page: fail loudly, keep the state
            with pytest.raises(ExceptionGroup) as caught:
                await job().run()
            assert caught.group_contains(SliceIncompleteError, match="cannot be proved complete")
            written = ids_in(out)
            assert max(written.values()) == 1
            assert set(written) < set(expected(server.data))
            assert not JsonlDestination.read_only(state).done
        else:
            outcome = await job().run()
            assert outcome.status == "done"
            assert ids_in(out) == expected(server.data)
            assert server.counters.expired_scroll_hits > 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("shape", SHAPES)
def test_kill_9_mid_backfill_then_resume_writes_each_event_once(tmp_path: Path, shape: str) -> None:
    options = {
        "events": 6_000,
        "events_start": SINCE.isoformat(),
        "events_end": (SINCE + timedelta(days=3)).isoformat(),
        "event_shape": shape,
        "rate_limit_mode": "off",
    }
    out = tmp_path / "events.jsonl"
    with SimulatorProcess(**options) as proc:
        args = [
            sys.executable,
            "-m",
            "tests.backfill.backfill_worker",
            proc.base_url,
            proc.client_key,
            proc.client_secret,
            proc.organization,
            str(out),
            SINCE.isoformat(),
            UNTIL.isoformat(),
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        for wanted in (3, 5):
            child = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)
            assert child.stdout is not None
            pages = 0
            for line in child.stdout:
                pages += line.strip() == "page"
                if pages == wanted:
                    child.send_signal(signal.SIGKILL)
                    break
            child.wait(timeout=60)
            child.stdout.close()
            assert child.returncode == -signal.SIGKILL
        final = subprocess.run(
            args, capture_output=True, text=True, timeout=120, env=env, check=False
        )
        assert final.returncode == 0, final.stderr
        assert final.stdout.strip().endswith("done")
    data = Simulator(
        events=6_000, events_start=SINCE, events_end=SINCE + timedelta(days=3), event_shape=shape
    ).data
    assert ids_in(out) == expected(data)


async def test_the_plans_estimate_is_within_10_percent_of_what_the_run_spends(
    tmp_path: Path,
) -> None:
    days, per_day = 6, 10_000
    until = SINCE + timedelta(days=days)
    server = Simulator(
        events=days * per_day,
        events_start=SINCE,
        events_end=until,
        rate_limit_mode="off",
        # pages of 10,000 take real time to decode and commit: a window of 3 real seconds
        clock=ScaledClock(20.0),
    )
    async with server, client_for(server, limits=NO_LIMITS) as api:
        slices = plan_slices(SINCE, until, even_slice_size(SINCE, until, 4))
        plan = estimate(slices, events_per_day=per_day, page_size=10_000)
        job = events_backfill(
            api, since=SINCE, until=until, out=tmp_path / "e.jsonl", state=tmp_path / "s"
        )
        outcome = await job.run()
    spent = outcome.progress.requests_run
    assert abs(plan.page_requests - spent) <= 0.1 * spent
    # the floor: ceil(events / 10,000) pages plus one ending page per concurrent scroll
    assert spent <= -(-days * per_day // 10_000) + 4
