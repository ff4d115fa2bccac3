"""A page that is fetched again (a truncated body, retried) is handed out once, and leaves
nothing behind: decoding is pure inside the retry loop; the spill file, the counters and
the queue see only the attempt that succeeded.

The scroll runs on a virtual clock against a fake of the events API (the simulator's own
events, served by a MockTransport): what the keep-alive fetches while the consumer waits
depends on the program only, never on the machine's load (over real HTTP on a scaled clock,
a busy machine let one page into memory instead of the spill file: issue 40).
"""

from __future__ import annotations

from collections.abc import Sequence

from asyncwifi import Client, MockTransport, StreamOptions
from asyncwifi._instant import format_instant
from asyncwifi._transport import Request, Response
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END
from tests._virtualclock import VirtualClock
from tests.client._support import NO_LIMITS

JSON = {"Content-Type": "application/json"}


class _EventsScroll:
    """The events API's scroll (spec §4.5) over ``order`` (indices into the simulator's
    events): a new scroll id on each page, the end a short page; the body of the ``cut``-th
    events answer is cut in half, once (a truncated read)."""

    def __init__(self, sim: Simulator, order: Sequence[int], cut: int, clock: VirtualClock) -> None:
        self.events = sim.data.events
        self.clock = clock
        self.order = order
        self.cut = cut
        #: events answers sent (the cut one included)
        self.pages = 0

    def __call__(self, request: Request) -> Response:
        if request.path.endswith("/login/services"):
            return Response(200, JSON, b'{"token": "a-token"}')
        params = dict(request.params or {})
        start = int(params.get("scrollId", "0"))
        page = self.order[start : start + int(params["size"])]
        generated = format_instant(self.clock.now()).encode()
        body = b'{"status":"OK","generated":"%s","count":%d,' % (generated, len(page))
        body += b'"scrollId":"%d","events":[%s]}' % (start + len(page), self.events.join(page))
        self.pages += 1
        if self.pages == self.cut:
            body = body[: len(body) // 2]
        return Response(200, JSON, body)


def test_a_truncated_page_retried_while_memory_is_full_leaves_no_spill_entry() -> None:
    # 450 events in pages of 100: the fifth page is short and ends the scroll. One page in
    # memory; the keep-alive fetches pages 3 to 5 into the spill file while the consumer
    # waits, and the first answer for page 3 is cut short (undecodable), then retried
    sim = Simulator(events=450)  # its data only: nothing is served over HTTP
    order = sim.data.events.select()
    # the day after the events'; the keep-alive's timeout (the loop's) in virtual time too
    clock = VirtualClock(start=DEFAULT_EVENTS_END, loop_time=True)
    api = _EventsScroll(sim, order, cut=3, clock=clock)

    async def main() -> tuple[list[str], int, int, int]:
        client = Client("key", "secret", base_url="https://api.invalid", organization="org",
                        transport=MockTransport(api), limits=NO_LIMITS, clock=clock)  # fmt: skip
        async with client:
            stream = client.events.list(size=100, options=StreamOptions(max_buffered=1))
            pages = aiter(stream.pages())
            ids = [e.id for e in (await anext(pages)).items]
            # five pages and the retry, each answered (a request counts when it is sent: the
            # last answer could come after the consumer took a page, and stay in memory)
            while stream.pages_fetched < 5:
                await clock.sleep(5.0)
            assert stream.requests == 6
            for _ in range(4):
                ids.extend(e.id for e in (await anext(pages)).items)
            # every spilled page was read: the file starts over (no entry nobody takes)
            assert stream._producer.spill.size == 0
            assert [p async for p in pages] == []
        return ids, stream.pages_spilled, stream.delivered, stream.requests

    ids, spilled, delivered, requests = clock.run(main())
    assert ids == sim.data.event_ids()
    assert api.pages == requests == 6
    assert spilled == 3  # pages 3, 4 and 5; the cut answer is not a page
    assert delivered == 450
