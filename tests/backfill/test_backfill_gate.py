"""An events backfill under the month's object allowance (spec §8; issue 39): its concurrent
slices together read no more than the allowance leaves (it wrote 40,000 events under an
allowance of 500: a page of 10,000 per slice), pause with what they wrote saved, and, told
to wait, go on each 1st until every event is written once. The simulator's served objects
are the truth the client's counts must equal."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import Limits, ScaledClock
from asyncwifi.backfill import events_backfill
from asyncwifi.testing import Simulator
from tests._virtualclock import VirtualClock
from tests.client._support import client_for

SINCE = datetime(2024, 1, 1, tzinfo=UTC)
UNTIL = datetime(2024, 1, 3, tzinfo=UTC)
SHAPES = ("nested", "flat", "dated")
#: the allowance, and no request limit in the way
AT_500 = Limits(minute=None, day=None, month=500, on_exhausted="raise")


def ids_in(path: Path) -> Counter[str]:
    records = (json.loads(line) for line in path.read_bytes().splitlines())
    return Counter(r["event"]["id"] if "event" in r else r["id"] for r in records)


def simulator(shape: str, events: int, **options: Any) -> Simulator:
    options.setdefault("clock", ScaledClock(40.0))
    return Simulator(
        events=events,
        events_start=SINCE,
        events_end=SINCE + timedelta(days=2),
        event_shape=shape,
        rate_limit_mode="off",
        **options,
    )


@pytest.mark.parametrize("shape", SHAPES)
async def test_four_slices_write_the_allowance_and_pause(tmp_path: Path, shape: str) -> None:
    server = simulator(shape, 6_000)
    async with server, client_for(server, limits=AT_500) as api:
        out = tmp_path / "events.jsonl"
        job = events_backfill(api, since=SINCE, until=UNTIL, out=out, state=tmp_path / "state")
        outcome = await job.run()
        assert outcome.status == "paused"
        assert outcome.reset_at is not None
        reset = datetime.fromtimestamp(outcome.reset_at, UTC)
        assert (reset.day, reset.hour, reset.minute) == (1, 0, 0)  # the 1st, 00:00 UTC
        written = ids_in(out)
        assert max(written.values()) == 1
        served = server.counters.objects_served["events"]
        assert served <= 500  # was 40,000 at most: a page of 10,000 per slice
        assert len(written) <= served
        assert await api.scheduler.objects() == {"events": served}
        if shape != "flat":  # a slice in UTC order spends the last objects on a smaller page
            assert served == 500


@pytest.mark.parametrize("shape", SHAPES)
def test_told_to_wait_it_goes_on_each_first_until_every_event_is_written_once(
    tmp_path: Path, shape: str
) -> None:
    clock = VirtualClock(datetime(2026, 11, 30, 20, 0, tzinfo=UTC).timestamp())

    async def main() -> None:
        server = simulator(shape, 1_400, clock=clock)
        async with server, client_for(server, limits=AT_500) as api:
            out = tmp_path / "events.jsonl"
            job = events_backfill(
                api, since=SINCE, until=UNTIL, out=out, state=tmp_path / "state", wait=True
            )
            outcome = await job.run()
            assert outcome.status == "done"
            written = ids_in(out)
            assert set(written) == set(
                server.data.event_ids(SINCE, UNTIL - timedelta(milliseconds=1))
            )
            assert max(written.values()) == 1
            # 500 each month from November's on, the rest in the last (a resume reads some
            # events again: the ones at its time, or, with no time, the slice's span so far)
            end = datetime.fromtimestamp(clock.now(), UTC)
            assert (end.day, end.hour) == (1, 0)  # it went on at the 1st
            months = (end.year - 2026) * 12 + end.month - 11
            served = server.counters.objects_served["events"]
            this_month = await api.scheduler.objects("events")
            assert served == 500 * months + this_month
            assert 0 < this_month <= 500
            assert 1_400 <= served <= (1_500 if shape != "flat" else 2_000)

    clock.run(main())
