"""``RedisStore``: one key's admission log in Redis, shared by processes on several hosts.

Each window is a sorted set of admission times (integer microseconds). One Lua script
decides and records atomically: it drops entries older than the window, counts the rest
(entries "in the future" of a slower client clock included, which only errs on the safe
side), reads the shared pause, and either adds the admission to every window or returns
the time at which to ask again. The script reads Redis' own clock (``TIME``) by default so
that hosts with skewed clocks share one time line; ``use_redis_time=False`` passes the
client clock's time instead, which tests in scaled time need (a ScaledClock's "minute" is
not Redis' minute). Keys expire by themselves (``PEXPIRE`` = span + 1 s).

If Redis cannot be reached, the store falls back to a conservative local limit: each
window's count times ``fallback_fraction`` (at least 1), the shortest window evenly paced
(no bursts), seeded with this
process's own recent admissions; it says so (``status``/``degraded``, a "fallback" event)
and retries Redis every ``reconnect_interval`` clock seconds. On return it first writes
the admissions made meanwhile into Redis, so other processes count them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from asyncwifi._auth import check_url, hide_password
from asyncwifi.errors import ClientStateError, ConfigurationError, ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive, KeepAlives, keepalive_logs
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._redis_scripts import _ACQUIRE, _MERGE, _PAUSE
from asyncwifi.ratelimit._store import Store, WindowUsage, _check_specs
from asyncwifi.ratelimit._window import WindowLog, Windows

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisStore"]

_US = 1_000_000


def _redis_errors() -> tuple[type[BaseException], ...]:
    """What sends the store to its fallback: any Redis failure, the network's or a script's."""
    from redis.exceptions import RedisError

    return (RedisError, OSError, asyncio.TimeoutError)


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
        self._owns_client = isinstance(url_or_client, str)
        #: the shared budget's name
        self.key = key
        self.prefix = prefix
        self.use_redis_time = use_redis_time
        self.fallback_fraction = fallback_fraction
        self.reconnect_interval = reconnect_interval
        self.op_timeout = op_timeout
        self._errors = _redis_errors()
        self._specs: tuple[WindowSpec, ...] | None = None
        self._keys: list[str] = []
        self._pause_key = f"{prefix}{{{key}}}:pause"
        self._hwm_key = f"{prefix}{{{key}}}:hwm"
        self._keepalive_key = f"{prefix}{{{key}}}:keepalive"
        #: the windows the keep-alive rule checks ("1") or not ("0"), by position
        self._checked: list[str] = []
        #: this process's open scrolls, for the fallback's local decisions
        self._keepalives = KeepAlives()
        self._counts: dict[str, int] = {}
        self._paced: dict[str, bool] = {}
        # this process's own admissions (full counts) and the conservative fallback logs
        self._shadow = Windows()
        self._fallback = Windows()
        self._hint = -math.inf  # the last "ask again at" the script returned (client time)
        self._hint_why = ""
        self._seen: dict[str, int] = {}  # the last counts the script reported
        self._token = uuid.uuid4().hex[:12]
        self._ids = itertools.count()
        self._degraded: str | None = None
        self._retry_at = -math.inf
        self._pending: list[tuple[float, str]] = []  # fallback admissions not yet in Redis
        self._bg: set[asyncio.Task[Any]] = set()
        self._scripts: dict[str, Any] = {}

    # -- binding and configuration ---------------------------------------------------------

    def bind(self, specs: Sequence[WindowSpec]) -> None:
        if self._specs is not None:
            _check_specs(self._specs, specs)
            return
        self._specs = tuple(specs)
        self._keys = [f"{self.prefix}{{{self.key}}}:{s.name}" for s in specs]
        self._counts = {s.name: s.count for s in specs}
        self._paced = {s.name: False for s in specs}
        self._shadow = Windows.from_specs(specs)
        checked = {w.name for w in keepalive_logs(self._shadow)}
        self._checked = ["1" if s.name in checked else "0" for s in specs]
        shortest = min(s.period for s in specs) if specs else 0.0
        fallback = []
        for s in specs:
            w = WindowLog(s.name, max(1, math.floor(s.count * self.fallback_fraction)), s.span)
            # the short window is paced (no bursts); pacing the day would space requests
            # minutes apart for nothing, its reduced count is enough
            w.paced = s.period == shortest
            fallback.append(w)
        self._fallback = Windows(fallback)

    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        if count is not None:
            self._counts[name] = max(1, min(self._counts[name], count))
            self._shadow.get(name).count = self._counts[name]
            w = self._fallback.get(name)
            w.count = max(1, min(w.count, math.floor(count * self.fallback_fraction)))
        if paced is not None:
            self._paced[name] = paced
            self._shadow.get(name).paced = paced
        self._shadow.refresh()
        self._fallback.refresh()

    # -- Redis plumbing --------------------------------------------------------------------

    def _redis(self) -> Redis:
        if self._client is None:
            from redis.asyncio import Redis as _Redis

            assert self._url is not None
            self._client = _Redis.from_url(
                self._url,
                socket_timeout=self.op_timeout,
                socket_connect_timeout=self.op_timeout,
                retry_on_timeout=False,
            )
        return self._client

    def _script(self, name: str, body: str) -> Any:
        client = self._redis()
        s = self._scripts.get(name)
        if s is None or s.registered_client is not client:
            s = self._scripts[name] = client.register_script(body)
        return s

    async def _call(self, name: str, body: str, keys: list[str], args: list[Any]) -> Any:
        script = self._script(name, body)
        async with asyncio.timeout(self.op_timeout):
            return await script(keys=keys, args=args)

    def _now_arg(self, now: float) -> str:
        return "" if self.use_redis_time else str(round(now * _US))

    # -- admission -------------------------------------------------------------------------

    async def acquire(
        self, now: float, keepalive: KeepAlive | None = None
    ) -> tuple[object | None, float]:
        if self._specs is None:
            raise ClientStateError("RedisStore.acquire() before bind(): give it to a Scheduler")
        if self._degraded is not None:
            if now < self._retry_at:
                return self._local(now, keepalive)
            if not await self._restore(now):
                return None, now  # time passed in the attempt: decide again with a fresh reading
        member = f"{self._token}:{next(self._ids)}"
        args: list[Any] = [self._now_arg(now), member, len(self._keys)]
        for spec, checked in zip(self._specs, self._checked, strict=True):
            pace = spec.span / self._counts[spec.name] if self._paced[spec.name] else 0.0
            # whole microseconds, rounded up: the window enforced is never shorter than asked
            span = math.ceil(spec.span * _US)
            args += [self._counts[spec.name], span, math.ceil(pace * _US), checked]
        if keepalive is None:
            args += ["", 0]
        else:
            args += [keepalive.token, round(keepalive.horizon * _US)]
        keys = [*self._keys, self._pause_key, self._hwm_key, self._keepalive_key]
        try:
            ok, r_now, r_wait, why, *used = await self._call("acquire", _ACQUIRE, keys, args)
        except self._errors as exc:
            self._enter_fallback(now, exc)
            return None, now  # time passed in the attempt: decide again with a fresh reading
        self._seen = {s.name: int(u) for s, u in zip(self._specs, used, strict=False)}
        # on the client's time line the script's time is absolute; on Redis' own clock only
        # differences carry over
        at = int(r_now) / _US if not self.use_redis_time else now
        if int(ok):
            self._hint = -math.inf
            t = self._shadow.record(at)
            self._fallback.record(at)
            self._keepalives.admitted(keepalive, at)
            return (t, member), at
        retry_at = at + (int(r_wait) - int(r_now)) / _US
        self._hint = retry_at
        # which window (or the shared pause) set the wait: a spent day is reported as such
        i = int(why)
        self._hint_why = self._specs[i - 1].name if 0 < i <= len(self._specs) else "pause"
        return None, retry_at

    def _local(self, now: float, keepalive: KeepAlive | None) -> tuple[object | None, float]:
        """The fallback decision: a fraction of each limit, paced, in this process only."""
        fallback = self._fallback
        if now < fallback.free:
            return None, fallback.next_free(now)[0]
        retry = self._keepalives.blocks(fallback, now, keepalive)
        if retry is not None:
            return None, retry
        t = fallback.record(now)
        self._keepalives.admitted(keepalive, t)
        self._shadow.record(now)
        member = f"{self._token}:{next(self._ids)}"
        self._pending.append((t, member))
        return (t, member), now

    def _enter_fallback(self, now: float, exc: BaseException) -> None:
        self._retry_at = now + self.reconnect_interval
        if self._degraded is None:
            why = f"{type(exc).__name__}: {exc}"
            why = hide_password(why, self._url) if self._url else why
            self._degraded = f"Redis unreachable ({why}); " + (
                f"local limit at {self.fallback_fraction:.0%} of each window, paced"
            )
            self._emit("fallback", self._degraded)

    async def _restore(self, now: float) -> bool:
        """Try Redis again; on success write the fallback admissions into it first."""
        self._retry_at = now + self.reconnect_interval
        try:
            r_now = await self._call("pause", _PAUSE, [self._pause_key], [self._now_arg(now), 0])
            if self._pending:
                offset = round(int(r_now) - now * _US)
                args: list[Any] = [offset, len(self._keys)]
                args += [round(s.span * _US) for s in self._specs or ()]
                for t, member in self._pending:
                    args += [round(t * _US), member]
                await self._call("merge", _MERGE, list(self._keys), args)
        except self._errors:
            return False
        self._pending.clear()
        reason = self._degraded or ""
        self._degraded = None
        self._emit("restored", f"Redis reachable again (was: {reason})")
        return True

    def next_free(self, now: float) -> tuple[float, str]:
        logs = self._fallback if self._degraded is not None else self._shadow
        best, why = logs.next_free(now)
        if self._degraded is None and self._hint > best:
            best, why = self._hint, self._hint_why
        return best, why

    def refund(self, ticket: object) -> None:
        if not isinstance(ticket, tuple):
            return
        t, member = ticket
        self._shadow.remove(t)
        self._fallback.remove(t)
        self._pending = [(pt, m) for pt, m in self._pending if m != member]
        if self._degraded is None:
            self._spawn(self._zrem(member))

    def drop_keepalive(self, token: str) -> None:
        self._keepalives.drop(token)
        if self._degraded is None and self._client is not None:
            self._spawn(self._zrem(token, [self._keepalive_key]))

    async def _zrem(self, member: str, keys: list[str] | None = None) -> None:
        # on failure the entry expires with its window: counting it is the safe side
        with contextlib.suppress(*self._errors):
            client = self._redis()
            async with asyncio.timeout(self.op_timeout):
                pipe = client.pipeline(transaction=False)
                for key in self._keys if keys is None else keys:
                    pipe.zrem(key, member)
                await pipe.execute()

    def pause(self, until: float, now: float) -> None:
        if until > now:
            self._spawn(self._pause(until - now, now))

    async def _pause(self, delay: float, now: float) -> None:
        """Share the pause: with Redis time it lands ``delay`` after Redis' TIME (the script
        runs a little after the 429 was seen, which errs on the safe side)."""
        if self._degraded is not None:
            return
        args = [self._now_arg(now), round(delay * _US)]
        with contextlib.suppress(*self._errors):
            await self._call("pause", _PAUSE, [self._pause_key], args)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)

    def project(self, now: float, k: int) -> list[float]:
        logs = self._fallback if self._degraded is not None else self._shadow
        times = logs.project(now, k)
        if self._degraded is None and self._hint > now and times:
            times = [max(t, self._hint) for t in times]
        return times

    def usage(self, now: float) -> dict[str, WindowUsage]:
        out: dict[str, WindowUsage] = {}
        logs = self._fallback if self._degraded is not None else self._shadow
        for w in logs:
            used = w.used(now)
            if self._degraded is None:
                used = max(used, self._seen.get(w.name, 0))
            newest = w.newest()
            out[w.name] = WindowUsage(
                w.count,
                min(used, w.count),
                max(w.next_free(now), self._hint if self._degraded is None else now),
                None if newest is None else newest + w.span,
            )
        return out

    @property
    def status(self) -> str:
        return "redis-fallback" if self._degraded is not None else "redis"

    @property
    def degraded(self) -> str | None:
        return self._degraded

    async def aclose(self) -> None:
        if self._bg:
            await asyncio.gather(*list(self._bg), return_exceptions=True)
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def __repr__(self) -> str:
        return f"RedisStore(key={self.key!r}, {self.status})"
