"""A page that is fetched again (a truncated body, retried) is handed out once, and leaves
nothing behind: decoding is pure inside the retry loop; the spill file, the counters and
the queue see only the attempt that succeeded."""

from __future__ import annotations

from typing import Any

from asyncwifi import ScaledClock, StreamOptions
from asyncwifi._transport import AiohttpTransport
from tests.client._support import NO_LIMITS, client_for

#: a faster clock: the consumer waits while the keep-alive fetches pages into the spill
FAST = 400.0


class _Truncating:
    """A transport that cuts the body of the ``nth`` events page in half, once."""

    def __init__(self, inner: Any, nth: int) -> None:
        self.inner = inner
        self.nth = nth
        self.pages = 0

    async def send(self, request: Any) -> Any:
        response = await self.inner.send(request)
        if request.path.endswith("/events") and response.status == 200:
            self.pages += 1
            if self.pages == self.nth:
                response.body = response.body[: len(response.body) // 2]
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_truncated_page_retried_while_memory_is_full_leaves_no_spill_entry(
    make_sim: Any,
) -> None:
    # 450 events in pages of 100: the fifth page is short and ends the scroll. One page in
    # memory; the keep-alive fetches pages 3 to 5 into the spill file while the consumer
    # waits, and the first answer for page 3 is cut short (undecodable), then retried
    async with make_sim(events=450, clock=ScaledClock(FAST)) as sim:
        transport = _Truncating(AiohttpTransport(sim.base_url), nth=3)
        async with client_for(sim, limits=NO_LIMITS, transport=transport) as api:
            stream = api.events.list(size=100, options=StreamOptions(max_buffered=1))
            pages = aiter(stream.pages())
            ids = [e.id for e in (await anext(pages)).items]
            while stream.requests < 6:  # five pages and the retry
                await sim.clock.sleep(5.0)
            for _ in range(4):
                ids.extend(e.id for e in (await anext(pages)).items)
            # every spilled page was read: the file starts over (no entry nobody takes)
            assert stream._producer.spill.size == 0
            assert [p async for p in pages] == []
        assert ids == sim.data.event_ids()
        assert transport.pages == 6
        assert stream.pages_spilled == 3  # pages 3, 4 and 5; the cut answer is not a page
        assert stream.delivered == 450
