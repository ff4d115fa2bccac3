"""``RedisStore``: one key's admission log in Redis, shared by processes on several hosts.

Each window is a sorted set of admissions (integer microseconds; members carry their tag).
One Lua script (``_redis_scripts``) decides and records atomically: it drops entries older
than the window, counts the rest (entries "in the future" of a slower client clock
included, which only errs on the safe side), reads the shared pause, and either adds the
admission to every window or returns the time at which to ask again. The script reads
Redis' own clock (``TIME``) by default so that hosts with skewed clocks share one time
line; ``use_redis_time=False`` passes the client clock's time instead, which tests in
scaled time need. Keys expire by themselves (``PEXPIRE`` = span + 1 s).

If Redis cannot be reached, the store falls back to a conservative local limit: each
window's count times ``fallback_fraction`` (at least 1), the shortest window evenly paced
(no bursts), seeded with this process's own recent admissions; it says so (``status``,
``degraded``) and retries Redis every ``reconnect_interval`` clock seconds. On return it
first writes the admissions made meanwhile into Redis, so other processes count them.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import math
import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from asyncwifi._auth import check_url, hide_password
from asyncwifi.errors import ClientStateError, ConfigurationError, ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive, checked
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._redis_scripts import _ACQUIRE, _MERGE, _PAUSE, _TALLY
from asyncwifi.ratelimit._store import Answer, MemoryStore, Store, WindowUsage

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisStore", "check_shared_key", "redis_asyncio"]

_US = 1_000_000


def check_shared_key(key: object, owner: str) -> None:
    """``ValidationError`` unless ``key`` names a shared budget (a non-empty string)."""
    if not key or not isinstance(key, str):
        raise ValidationError(f"{owner} needs a non-empty key naming the shared budget")


def redis_asyncio(owner: str) -> Any:
    """The ``redis.asyncio`` module, or a ``ConfigurationError`` naming the extra."""
    try:
        import redis.asyncio
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigurationError(
            f"{owner} needs the redis package: pip install 'asyncwifi[redis]'"
        ) from exc
    return redis.asyncio


class RedisStore(Store):
    """The admission log of API key ``key`` in Redis (``redis.asyncio``), shared by all users.

    ``url_or_client`` is a ``redis://`` URL (the store owns and closes that client) or a
    ``redis.asyncio.Redis`` (left open). ``prefix`` namespaces the keys. ``op_timeout`` (real
    seconds) bounds each Redis call before the fallback takes over.
    """

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        key: str,
        prefix: str = "asyncwifi:rl:",
        use_redis_time: bool = True,
        fallback_fraction: float = 0.25,
        reconnect_interval: float = 5.0,
        op_timeout: float = 1.0,
    ) -> None:
        super().__init__()
        check_shared_key(key, "RedisStore")
        if not 0 < fallback_fraction <= 1:
            raise ValidationError(f"fallback_fraction must be in (0, 1], got {fallback_fraction!r}")
        if not reconnect_interval > 0 or not op_timeout > 0:
            raise ValidationError("reconnect_interval and op_timeout must be > 0")
        redis_asyncio("RedisStore")
        if isinstance(url_or_client, str):
            check_url(url_or_client, "Redis")
        self._url = url_or_client if isinstance(url_or_client, str) else None
        self._client: Redis | None = None if isinstance(url_or_client, str) else url_or_client
        #: the shared budget's name
        self.key = key
        self.prefix = prefix
        self.use_redis_time = use_redis_time
        self.fallback_fraction = fallback_fraction
        self.reconnect_interval = reconnect_interval
        self.op_timeout = op_timeout
        from redis.exceptions import RedisError

        # what sends the store to its fallback: any Redis failure, the network's or a script's
        self._errors = (RedisError, OSError, asyncio.TimeoutError)
        self._keys: list[str] = []
        base = f"{prefix}{{{key}}}:"
        self._extra_keys = [base + "pause", base + "hwm", base + "keepalive"]
        # this process's own admissions at the full counts (the estimates) and at the
        # fallback's reduced counts (its decisions while Redis is unreachable)
        self._own = MemoryStore()
        self._fallback = MemoryStore()
        self._hint = (-math.inf, "")  # the last "ask again at" the script returned
        self._seen: dict[str, int] = {}  # the last counts the script reported
        self._token = uuid.uuid4().hex[:12]
        self._ids = itertools.count()
        self._retry_at = -math.inf
        self._pending: list[tuple[float, str]] = []  # fallback admissions not yet in Redis
        self._bg: set[asyncio.Task[Any]] = set()
        self._scripts: dict[str, Any] = {}

    def _setup(self, specs: list[WindowSpec]) -> None:
        self._keys = [f"{self.prefix}{{{self.key}}}:{s.name}" for s in specs]
        self._own.bind(specs)
        shortest = min((s.period for s in specs), default=0.0)
        reduced = [copy.copy(s) for s in specs]
        for s in reduced:
            s.count = max(1, math.floor(s.count * self.fallback_fraction))
            # the short window is paced (no bursts); pacing the day would space requests
            # minutes apart for nothing, its reduced count is enough
            s.paced = s.period == shortest
        self._fallback.bind(reduced)

    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        self._own.configure(name, count=count, paced=paced)
        if count is not None:
            self._fallback.configure(name, count=math.floor(count * self.fallback_fraction))

    # -- Redis plumbing --------------------------------------------------------------------

    async def _call(self, name: str, body: str, keys: list[str], args: list[Any]) -> Any:
        if self._client is None:
            from redis.asyncio import Redis as _Redis

            assert self._url is not None
            self._client = _Redis.from_url(
                self._url,
                socket_timeout=self.op_timeout,
                socket_connect_timeout=self.op_timeout,
                retry_on_timeout=False,
            )
        script = self._scripts.get(name)
        if script is None or script.registered_client is not self._client:
            script = self._scripts[name] = self._client.register_script(body)
        async with asyncio.timeout(self.op_timeout):
            return await script(keys=keys, args=args)

    def _now_arg(self, now: float) -> str:
        return "" if self.use_redis_time else str(round(now * _US))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)

    # -- admission -------------------------------------------------------------------------

    async def acquire(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        if self._bound is None:
            raise ClientStateError("RedisStore.acquire() before bind(): give it to a Scheduler")
        if self.degraded is not None:
            if now < self._retry_at:
                return await self._local(now, tag, keepalive)
            if not await self._restore(now):
                return None, now, ""  # time passed in the attempt: decide again
        call = asyncio.ensure_future(self._admit(now, tag, keepalive))
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            # the caller gave up while Redis decided: an admission made meanwhile goes back
            call.add_done_callback(lambda c: self._undo(c, tag))
            raise

    def _undo(self, call: asyncio.Future[Answer], tag: str) -> None:
        if not call.cancelled() and call.exception() is None and call.result()[0] is not None:
            self.refund(call.result()[0], tag)

    async def _admit(self, now: float, tag: str, keepalive: KeepAlive | None) -> Answer:
        specs = self._own.log.specs
        member = f"{self._token}:{next(self._ids)}:{tag}"
        kept = {w.name for w in checked(specs)}
        args: list[Any] = [self._now_arg(now), member, len(specs)]
        for w in specs:
            pace = w.span / w.count if w.paced else 0.0
            # whole microseconds, rounded up: the window enforced is never shorter than asked
            args += [w.count, math.ceil(w.span * _US), math.ceil(pace * _US), int(w.name in kept)]
        args += ["", 0] if keepalive is None else [keepalive.token, round(keepalive.horizon * _US)]
        try:
            ok, r_now, r_wait, why, *used = await self._call(
                "acquire", _ACQUIRE, [*self._keys, *self._extra_keys], args
            )
        except self._errors as exc:
            self._enter_fallback(now, exc)
            return None, now, ""  # time passed in the attempt: decide again
        self._seen = {w.name: int(u) for w, u in zip(specs, used, strict=False)}
        # on the client's time line the script's time is absolute; on Redis' own clock only
        # differences carry over
        at = int(r_now) / _US if not self.use_redis_time else now
        if int(ok):
            self._hint = (-math.inf, "")
            t = self._own.note(at, tag, None)
            self._fallback.note(at, tag, keepalive)
            return (t, member), at, ""
        i = int(why)
        name = (
            specs[i - 1].name if 0 < i <= len(specs) else ("pause", "keepalive")[i > len(specs) + 1]
        )
        self._hint = (at + (int(r_wait) - int(r_now)) / _US, name)
        return None, *self._hint

    async def _local(self, now: float, tag: str, keepalive: KeepAlive | None) -> Answer:
        """The fallback decision: a fraction of each limit, paced, in this process only."""
        ticket, at, why = await self._fallback.acquire(now, tag, keepalive)
        if ticket is None:
            return None, at, why
        t = self._own.note(now, tag, None)
        member = f"{self._token}:{next(self._ids)}:{tag}"
        self._pending.append((t, member))
        return (t, member), at, ""

    def _enter_fallback(self, now: float, exc: BaseException) -> None:
        self._retry_at = now + self.reconnect_interval
        if self.degraded is None:
            why = f"{type(exc).__name__}: {exc}"
            why = hide_password(why, self._url) if self._url else why
            self.degraded = (
                f"Redis unreachable ({why}); local limit at {self.fallback_fraction:.0%}"
                " of each window, paced"
            )

    async def _restore(self, now: float) -> bool:
        """Try Redis again; on success write the fallback admissions into it first."""
        self._retry_at = now + self.reconnect_interval
        try:
            r_now = await self._call("pause", _PAUSE, self._extra_keys[:1], [self._now_arg(now), 0])
            if self._pending:
                offset = round(int(r_now) - now * _US)
                args: list[Any] = [offset, len(self._keys)]
                args += [round(s.span * _US) for s in self._own.log.specs]
                for t, member in self._pending:
                    args += [round(t * _US), member]
                await self._call("merge", _MERGE, list(self._keys), args)
        except self._errors:
            return False
        self._pending.clear()
        self.degraded = None
        return True

    def refund(self, ticket: object, tag: str) -> None:
        if not isinstance(ticket, tuple):
            return
        t, member = ticket
        self._own.refund(t, tag)
        self._fallback.refund(t, tag)
        self._pending = [(pt, m) for pt, m in self._pending if m != member]
        if self.degraded is None:
            self._spawn(self._zrem(member, self._keys))

    def drop_keepalive(self, token: str) -> None:
        self._fallback.drop_keepalive(token)
        if self.degraded is None and self._client is not None:
            self._spawn(self._zrem(token, self._extra_keys[2:]))

    async def _zrem(self, member: str, keys: list[str]) -> None:
        # on failure the entry expires with its window: counting it is the safe side
        with contextlib.suppress(*self._errors):
            assert self._client is not None
            async with asyncio.timeout(self.op_timeout):
                pipe = self._client.pipeline(transaction=False)
                for key in keys:
                    pipe.zrem(key, member)
                await pipe.execute()

    def pause(self, until: float, now: float) -> None:
        if until > now and self.degraded is None:
            self._spawn(self._pause(until - now, now))

    async def _pause(self, delay: float, now: float) -> None:
        """Share the pause: with Redis time it lands ``delay`` after Redis' TIME (the script
        runs a little after the 429 was seen, which errs on the safe side)."""
        args = [self._now_arg(now), round(delay * _US)]
        with contextlib.suppress(*self._errors):
            await self._call("pause", _PAUSE, self._extra_keys[:1], args)

    # -- estimates and counts --------------------------------------------------------------

    def project(self, now: float, k: int) -> list[float]:
        if self.degraded is not None:
            return self._fallback.project(now, k)
        return [max(t, self._hint[0]) for t in self._own.project(now, k)]

    def usage(self, now: float) -> dict[str, WindowUsage]:
        if self.degraded is not None:
            return self._fallback.usage(now)
        return {
            name: u._replace(
                used=min(max(u.used, self._seen.get(name, 0)), u.limit),
                next_at=max(u.next_at, self._hint[0]),
            )
            for name, u in self._own.usage(now).items()
        }

    async def tally(self, now: float, window: str) -> dict[str, int]:
        """Every process's admissions per tag; while Redis is unreachable, this process's."""
        if self.degraded is None:
            span = math.ceil(self._own.log.spec(window).span * _US)
            key = self._keys[[w.name for w in self._own.log.specs].index(window)]
            try:
                flat = await self._call("tally", _TALLY, [key], [self._now_arg(now), span])
            except self._errors as exc:
                self._enter_fallback(now, exc)
            else:
                return {_text(t): int(c) for t, c in zip(flat[::2], flat[1::2], strict=True)}
        return await self._own.tally(now, window)

    @property
    def status(self) -> str:
        return "redis-fallback" if self.degraded is not None else "redis"

    async def aclose(self) -> None:
        if self._bg:
            await asyncio.gather(*list(self._bg), return_exceptions=True)
        if self._url is not None and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def __repr__(self) -> str:
        return f"RedisStore(key={self.key!r}, {self.status})"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
