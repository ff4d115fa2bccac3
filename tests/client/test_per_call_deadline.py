"""``max_wait`` is an admission deadline, seen from the server (issue 42): while a bulk load
keeps the minute full, calls that may wait 2 s each return or raise within 2 s (+0.2), and
none reaches the simulator after its deadline, on a geared scaled clock (fast through the
minute, slow while the deadlines run) so that a loaded machine cannot make it pass or fail."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from aiohttp import web

from asyncwifi import Client, Contact, Lane, ScaledClock
from asyncwifi.errors import QuotaExhaustedError, ValidationError
from asyncwifi.testing import Simulator
from asyncwifi.testing._api_contacts import ContactsApi
from tests.client._support import client_for


class GearedClock(ScaledClock):
    """A scaled clock whose speed the test changes on the way, from the time it shows."""

    __slots__ = ()

    def shift(self, speed: float) -> None:
        self.start, self._m0, self.speed = self.now(), time.monotonic(), speed


async def _until(condition: Any, what: str, limit: float = 20.0) -> None:
    """Wait (real time, bounded) for ``condition()``: a condition, never a duration."""
    give_up = time.monotonic() + limit
    while not await condition():
        assert time.monotonic() < give_up, f"timed out waiting for {what}"
        await asyncio.sleep(0.001)


async def test_max_wait_under_a_saturated_minute_answers_in_time_and_never_sends_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a bulk load keeps the minute full, 100 concurrent ``max_wait=2`` gets each
    return or raise within 2 s (+0.2), none reaches the server after its deadline, no 429."""
    arrivals: dict[str, float] = {}
    outcomes: dict[str, tuple[float, float, BaseException | None]] = {}
    get = ContactsApi.contact_get

    async def recording(self: ContactsApi, request: web.Request) -> web.Response:
        arrivals.setdefault(request.match_info["cid"], self.sim.clock.now())
        return await get(self, request)

    monkeypatch.setattr(ContactsApi, "contact_get", recording)
    clock = GearedClock(100.0)
    async with Simulator(clock=clock, contacts=160) as sim, client_for(sim) as api:
        cids = [c.cid or "" async for c in api.contacts.list(size=160)]
        bulk = api.with_options(lane=Lane.BULK)

        async def backfill(i: int) -> None:
            for n in itertools.count(i, 8):
                await bulk.contacts.get(cids[100 + n % 60])

        workers = [asyncio.create_task(backfill(i)) for i in range(8)]
        try:
            await _saturated_phase(api, clock, arrivals, cids[:100], outcomes)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
    took = [end - start for start, end, _ in outcomes.values()]
    sent = {cid for cid, (_, _, error) in outcomes.items() if error is None}
    late = [cid for cid, (start, _, _) in outcomes.items() if arrivals.get(cid, 0) > start + 2]
    assert len(outcomes) == 100
    for start, _, error in outcomes.values():
        if isinstance(error, QuotaExhaustedError):  # when it could have gone: past the deadline
            assert (error.limit, error.reset_at >= start + 2) == ("max_wait", True)
    assert max(took) <= 2.2, sorted(took)[-5:]
    assert late == []
    assert sent, "none was admitted within its 2 s"
    assert len(sent) < 100, "the minute was not saturated"
    assert {cid for cid in cids[:100] if cid in arrivals} == sent  # a raise sent nothing
    assert sim.counters.rate_limited == 0


async def _saturated_phase(
    api: Client,
    clock: GearedClock,
    arrivals: dict[str, float],
    cids: list[str],
    outcomes: dict[str, tuple[float, float, BaseException | None]],
) -> None:
    """Once the minute is full, near its end (fast till then, slow after): 100 concurrent
    ``max_wait=2`` gets, each one's start, end and error in ``outcomes``."""

    async def saturated() -> bool:
        return sum((await api.scheduler.used(window="minute")).values()) >= 60

    await _until(saturated, "a saturated minute")

    async def a_slot_frees_soon() -> bool:  # the limiter's own estimate: 1.5 s ahead or less
        now = clock.now()
        return api.scheduler.earliest_admission(Lane.INTERACTIVE, deadline=now + 2) <= now + 1.5

    await _until(a_slot_frees_soon, "the minute's end near")
    clock.shift(2.0)
    quick = api.with_options(max_wait=2)

    async def one(cid: str) -> None:
        started, error = clock.now(), None
        try:
            assert isinstance(await quick.contacts.get(cid), Contact)
        except QuotaExhaustedError as exc:
            error = exc
        outcomes[cid] = (started, clock.now(), error)

    await asyncio.gather(*(one(cid) for cid in cids))


async def test_from_env_takes_max_wait_and_refuses_a_wrong_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with Simulator(clock=ScaledClock(100.0), contacts=3) as sim:
        for name, value in (("CLIENT_KEY", sim.client_key), ("CLIENT_SECRET", sim.client_secret),
                            ("BASE_URL", sim.base_url), ("ORGANIZATION", sim.organization),
                            ("ALLOW_HTTP", "1")):  # fmt: skip
            monkeypatch.setenv(f"ASYNCWIFI_{name}", value)
        async with Client.from_env(clock=sim.clock, max_wait=30) as api:
            assert len([c async for c in api.contacts.list(limit=2)]) == 2
        with pytest.raises(ValidationError):
            Client.from_env(max_wait=-1)
        assert sim.counters.requests == 2  # the login and the one page
