"""``asyncwifi --allowance 500 events backfill``: the command reads no more objects than the
allowance (spec §8; issue 39: it wrote 40,000 events, a page of 10,000 per slice), pauses with
what it wrote saved, and says the month's allowance is spent."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from asyncwifi.cli import ExitCode
from tests.cli.conftest import Result

WEEK = ("--since", "2026-01-01", "--until", "2026-01-08")


def test_a_backfill_under_an_allowance_of_500_writes_500_and_pauses(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--simulate", "--allowance", "500", "--log-format", "json",
                 "events", "backfill", *WEEK, "--out", "e.jsonl")  # fmt: skip
    assert result.code == ExitCode.TEMPFAIL == 75, result.err
    lines = (clean_env / "e.jsonl").read_text().splitlines()
    assert len(lines) == 500  # the simulated week holds 70,000
    ids = [json.loads(line)["event"]["id"] for line in lines]
    assert len(set(ids)) == 500
    records = [json.loads(line) for line in result.err.splitlines() if line.startswith("{")]
    (paused,) = [r for r in records if r["event"] == "quota_exhausted"]
    assert paused["quota"] == "month"
    assert str(paused["message"]).startswith("the month's object allowance is spent")
    assert paused["objects_run"] == paused["records_run"] == 500
    assert paused["objects_left_month"] == 0
