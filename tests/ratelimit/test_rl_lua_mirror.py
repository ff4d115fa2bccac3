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

from asyncwifi.ratelimit import MemoryStore
from asyncwifi.ratelimit._keepalive import KeepAlive, checked
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log
from asyncwifi.ratelimit._redis_scripts import ACQUIRE
from tests.ratelimit.rlhelpers import earliest, require_redis

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
#: (step, op): op -1 a plain request, 0-2 a request of open scroll k, 3-5 scroll k-3 ends
scroll_steps = st.lists(st.tuples(st.integers(0, 30), st.integers(-1, 5)), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(windows=windows, steps=steps)
def test_lua_and_python_agree(windows: list[tuple[int, int, bool]], steps: list[int]) -> None:
    require_redis()
    asyncio.run(_agree(windows, steps))


async def _agree(windows: list[tuple[int, int, bool]], steps: list[int]) -> None:
    client = redis_asyncio.Redis.from_url(URL)
    tag = uuid.uuid4().hex
    keys = [f"t:{{{tag}}}:log"]  # the one sorted set every window counts in
    script = client.register_script(ACQUIRE)
    python = Log(
        [WindowSpec(f"w{i}", c, float(s), 0.0, paced=p) for i, (c, s, p) in enumerate(windows)]
    )
    try:
        now = 1_000
        for n, step in enumerate(steps):
            now += step
            args: list[object] = [str(now), f"m{n}:x", len(windows)]
            for count, span, paced in windows:
                args += [count, span, span // count if paced else 0, "0"]
            args += ["", 0]
            ok, _, wait, _why, *_ = await script(
                keys=[*keys, f"t:{{{tag}}}:pause", f"t:{{{tag}}}:hwm", f"t:{{{tag}}}:ka"],
                args=args,
            )
            py_free = earliest(python)[0]
            admitted = float(now) >= py_free
            if admitted:
                python.record(float(now), "x")
            assert bool(int(ok)) == admitted, (n, now, py_free)
            if not int(ok):
                assert int(wait) == py_free, (n, wait, py_free)
    finally:
        await client.delete(*keys, f"t:{{{tag}}}:pause", f"t:{{{tag}}}:hwm")
        await client.aclose()


@settings(max_examples=60, deadline=None)
@given(
    windows=windows,
    steps=scroll_steps,
    horizons=st.lists(st.integers(1, 40), min_size=3, max_size=3),
)
def test_lua_and_python_keep_scrolls_alive_alike(
    windows: list[tuple[int, int, bool]], steps: list[tuple[int, int]], horizons: list[int]
) -> None:
    """The keep-alive rule (``_keepalive``) and its Lua mirror: same decisions, same
    times to ask again, with open scrolls starting, continuing and ending at random."""
    require_redis()
    asyncio.run(_agree_keepalive(windows, steps, horizons))


async def _agree_keepalive(
    windows: list[tuple[int, int, bool]], steps: list[tuple[int, int]], horizons: list[int]
) -> None:
    client = redis_asyncio.Redis.from_url(URL)
    tag = uuid.uuid4().hex
    keys = [f"t:{{{tag}}}:log"]  # the one sorted set every window counts in
    extra = [f"t:{{{tag}}}:pause", f"t:{{{tag}}}:hwm", f"t:{{{tag}}}:ka"]
    script = client.register_script(ACQUIRE)
    python = MemoryStore()
    python.bind([WindowSpec(f"w{i}", c, float(s), 0.0) for i, (c, s, _) in enumerate(windows)])
    kept = {w.name for w in checked(python.log.specs)}
    scrolls = [KeepAlive(f"s{k}", float(h)) for k, h in enumerate(horizons)]
    try:
        now = 1_000
        for n, (step, op) in enumerate(steps):
            now += step
            if op >= 3:
                python.drop_keepalive(scrolls[op - 3].token)
                await client.zrem(extra[2], scrolls[op - 3].token)
                continue
            ka = scrolls[op] if op >= 0 else None
            args: list[object] = [str(now), f"m{n}", len(windows)]
            for i, (count, span, _) in enumerate(windows):
                args += [count, span, 0, "1" if f"w{i}" in kept else "0"]
            args += ["", 0] if ka is None else [ka.token, round(ka.horizon)]
            ok, _, wait, _why, *_ = await script(keys=[*keys, *extra], args=args)
            ticket, retry, _ = python.take(float(now), "x", ka)
            admitted = ticket is not None
            assert bool(int(ok)) == admitted, (n, now, python.due)
            if not admitted:
                assert int(wait) == retry, (n, now, wait, retry, python.due)
    finally:
        await client.delete(*keys, *extra)
        await client.aclose()
