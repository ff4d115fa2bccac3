"""A sync budget shared in Redis: what one process (or a daemon before its restart) spent
today counts for the next, so together they stay within the share; Redis down, the sync
goes on counting alone."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi import ScaledClock
from asyncwifi.sync import Budget, RedisLedger, Syncer, SyncOptions, open_destination
from asyncwifi.sync._ledger import key_name
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.ratelimit.rlhelpers import require_redis

REDIS = "redis://127.0.0.1:6379/0"
MIDNIGHT = 1_767_225_600.0  # 2026-01-01T00:00:00Z
ONLY_EVENTS = {"events": 1.0}


def _key() -> str:
    return key_name(f"test-{uuid.uuid4().hex}")


async def test_two_budgets_on_one_ledger_see_each_others_spending() -> None:
    require_redis()
    clock = ScaledClock(1.0, start=MIDNIGHT + 3_600)
    key = _key()
    first, second = RedisLedger(REDIS, key=key), RedisLedger(REDIS, key=key)
    try:
        a = Budget(100, clock=clock, ledger=first)
        b = Budget(100, clock=clock, ledger=second)
        a.spend("events", 30)
        a.spend("contacts", 5)
        await a.refresh()
        await b.refresh()
        assert b.spent["events"] == 30
        assert b.remaining("contacts") == 30 - 5
        b.spend("events", 10)
        assert not await b.wait("events", 2)  # 100 - 5 - 40 left: no wait
        await a.refresh()
        assert a.spent["events"] == 40
        assert a.remaining("events") == 100 - 5 - 40
    finally:
        await first.aclose()
        await second.aclose()


async def test_redis_down_the_budget_counts_alone_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ScaledClock(1.0, start=MIDNIGHT + 3_600)
    ledger = RedisLedger("redis://127.0.0.1:1/0", key=_key(), op_timeout=0.5)
    try:
        budget = Budget(100, clock=clock, ledger=ledger)
        budget.spend("events", 7)
        with caplog.at_level(logging.WARNING, logger="asyncwifi.sync"):
            assert not await budget.wait("events", 2)
            await budget.refresh()
        assert budget.spent["events"] == 7
        assert caplog.text.count("shared budget is unreachable") == 1  # said once
    finally:
        await ledger.aclose()


async def test_a_second_process_waits_for_the_day_the_first_spent(tmp_path: Path) -> None:
    require_redis()
    # a day passes in about four real seconds
    clock = ScaledClock(20_000.0, start=MIDNIGHT + 43_200.0)  # noon: 2 s to midnight
    day = int(clock.now() // 86_400)
    key = _key()
    options = SyncOptions(
        since=datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC),
        until=datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC),
        page_size=500,
    )
    async with Simulator(clock=clock, events=3_000, contacts=20, rate_limit_mode="off",
                         scroll_ttl=1e9) as sim:  # fmt: skip

        async def one_process(name: str) -> tuple[Syncer, float]:
            ledger = RedisLedger(REDIS, key=key)
            budget = Budget(8, clock=clock, shares=ONLY_EVENTS, ledger=ledger)
            store = open_destination(f"sqlite:///{tmp_path / name}.db")
            await store.open()
            try:
                async with sim.client(scroll_window=1e9) as api:
                    syncer = Syncer(api, store, options=options, budget=budget)
                    await syncer.sync_events()
                    assert await store.count("events") == 3_000
                    return syncer, clock.now()
            finally:
                await budget.refresh()
                await store.close()
                await ledger.aclose()

        first, first_done = await one_process("a")
        spent = sum(first.stats.requests.values())
        assert 8 - 2 < spent <= 8, "the first process takes most of the day's budget"
        assert first_done < (day + 1) * 86_400, "and finishes the same day"
        second, second_done = await one_process("b")
        # without the shared counts it would have started at once, on the same day
        assert second_done >= (day + 1) * 86_400
        assert sum(second.stats.requests.values()) == spent

    probe = RedisLedger(REDIS, key=key)
    try:
        assert (await probe.add(day, {}))["events"] == spent
        assert (await probe.add(day + 1, {}))["events"] == spent
    finally:
        await probe.aclose()
