"""The Lua admission script and the Python window type decide alike, on random logs.

Both are fed the same sequence of attempts (times in whole microseconds, so the float and
integer arithmetic agree exactly) with random counts, spans and paced mode; every decision
(admitted or not, and the time to ask again) must match. Needs the machine's Redis.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncwifi.ratelimit._redis import _ACQUIRE
from asyncwifi.ratelimit._window import WindowLog, Windows
from tests.ratelimit.rlhelpers import require_redis

redis_asyncio = pytest.importorskip("redis.asyncio")
URL = "redis://127.0.0.1:6379"


# (count, span, paced); a span a multiple of the count keeps the paced spacing whole, as
# the store's microseconds are
windows = st.lists(
    st.tuples(st.integers(1, 6), st.integers(1, 10), st.booleans()).map(
        lambda w: (w[0], w[0] * w[1], w[2])
    ),
    min_size=1,
    max_size=3,
)
steps = st.lists(st.integers(0, 30), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(windows=windows, steps=steps)
def test_lua_and_python_agree(windows: list[tuple[int, int, bool]], steps: list[int]) -> None:
    require_redis()
    asyncio.run(_agree(windows, steps))


async def _agree(windows: list[tuple[int, int, bool]], steps: list[int]) -> None:
    client = redis_asyncio.Redis.from_url(URL)
    tag = uuid.uuid4().hex
    keys = [f"t:{{{tag}}}:w{i}" for i in range(len(windows))]
    script = client.register_script(_ACQUIRE)
    logs = []
    for i, (count, span, paced) in enumerate(windows):
        w = WindowLog(f"w{i}", count, float(span))
        w.paced = paced
        logs.append(w)
    python = Windows(logs)
    try:
        now = 1_000
        for n, step in enumerate(steps):
            now += step
            args: list[object] = [str(now), f"m{n}", len(windows)]
            for count, span, paced in windows:
                args += [count, span, span // count if paced else 0]
            ok, _, wait, _why, *_ = await script(
                keys=[*keys, f"t:{{{tag}}}:pause", f"t:{{{tag}}}:hwm"], args=args
            )
            py_free = python.free
            admitted = python.try_admit(float(now)) is not None
            assert bool(int(ok)) == admitted, (n, now, py_free)
            if not int(ok):
                assert int(wait) == py_free, (n, wait, py_free)
    finally:
        await client.delete(*keys, f"t:{{{tag}}}:pause", f"t:{{{tag}}}:hwm")
        await client.aclose()
