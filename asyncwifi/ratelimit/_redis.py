"""``RedisStore``: one key's admission log in Redis, shared by processes on several hosts;
Lua scripts (``_redis_scripts``) decide and record atomically, on one time line; the objects
exchanged per kind, a hash per UTC day and month, beside it.

Objects are reserved before a request is sent (``RESERVE``: what the allowance leaves less
every process's live reservations, each with a time to live, so that one of a process that
died does not hold forever) and settled by the batch that adds the request's count (the
reservation ends in the same script). Object counts are sent in numbered batches, one at a
time and in order (``_objects_lock``): a batch whose answer was lost (a timeout after Redis
ran it) is sent again and the script adds it only once, so counts made while Redis is
unreachable reach it exactly once. Until they do, this process answers with the counts
Redis last gave plus its own since: never fewer than it knows were exchanged (a month's
allowance must not look unspent because Redis blinked)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import itertools
import json
import math
import uuid
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from asyncwifi._auth import check_url, hide_password
from asyncwifi._defaults import HOLD_TTL, RATE_PREFIX, REDIS_TIMEOUT
from asyncwifi._extras import require
from asyncwifi._instant import utc_period
from asyncwifi.errors import ClientStateError, ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive, checked
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log
from asyncwifi.ratelimit._redis_scripts import ACQUIRE, OBJECTS, PAUSE, RESERVE, TALLY
from asyncwifi.ratelimit._store import Answer, MemoryStore, RateStore
from asyncwifi.ratelimit._volume import ALL, Grant, ObjectCounts

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisStore", "key_name", "redis_asyncio", "redis_client"]

_US = 1_000_000
#: how long Redis keeps a month's and a day's object counts (real milliseconds): a little
#: longer than the period, so that a late reader still finds them
_KEEP_MONTH_MS, _KEEP_DAY_MS = 40 * 86_400_000, 2 * 86_400_000


class Entry(NamedTuple):
    """One admission: logged at ``at`` in this process's log, as ``member`` in Redis' (the
    ticket a refund hands back)."""

    at: float
    member: str


class Batch(NamedTuple):
    """Object counts sent to Redis as batch ``number`` of this process: ``adds`` per kind
    in UTC ``period`` (month, day), ending the reservations ``ends``."""

    number: int
    period: tuple[str, str]
    adds: dict[str, int]
    ends: list[str]


def _period(now: float) -> tuple[str, str]:
    """The UTC month and day holding ``now``: the hashes its objects are counted in."""
    return utc_period(now, "month"), utc_period(now, "day")


def key_name(client_key: str) -> str:
    """The name a key's shared log goes by in Redis: a hash of the API key, never the key
    (``RedisStore.key_name``, which owns it: ``RedisStore.for_key`` names its store so)."""
    return "k-" + hashlib.sha256(client_key.encode()).hexdigest()[:16]


def redis_client(url: str, owner: str, *, timeout: float = REDIS_TIMEOUT) -> Redis:
    """The one way asyncwifi connects to Redis (the rate store, the webhook nonces, the fleet
    worker's pool): ``url`` checked (never repeated: it may hold a password), connecting and
    each call bounded by ``timeout`` real seconds, a timeout not retried (the caller's
    fallback decides). ``owner`` names what needs the ``redis`` extra when it is missing."""
    module = redis_asyncio(owner)
    check_url(url, "Redis")
    client: Redis = module.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False
    )
    return client


def redis_asyncio(owner: str) -> Any:
    """The ``redis.asyncio`` module, or a ``ConfigurationError`` naming the extra."""
    return require("redis.asyncio", "redis", owner)


class RedisStore(RateStore):
    """The admission log of API key ``key`` in Redis, shared by all users: ``url_or_client``
    is a ``redis://`` URL (the store owns that client) or a ``redis.asyncio.Redis`` (left
    open); ``op_timeout`` (real seconds) bounds each call. Without Redis the limit is each
    window's count times ``fallback_fraction`` (the shortest paced), said in ``degraded``;
    Redis is tried every ``reconnect_interval`` clock seconds and, once back, given the
    admissions made meanwhile. A reservation of objects lapses ``hold_ttl`` seconds (of the
    script's clock) after it was made if its request never settles it (a process that died)."""

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        key: str,
        prefix: str = RATE_PREFIX,
        use_redis_time: bool = True,
        fallback_fraction: float = 0.25,
        reconnect_interval: float = 5.0,
        op_timeout: float = REDIS_TIMEOUT,
        hold_ttl: float = HOLD_TTL,
    ) -> None:
        super().__init__()
        if not key or not isinstance(key, str):
            raise ValidationError("RedisStore needs a non-empty key naming the shared budget")
        if not 0 < fallback_fraction <= 1:
            raise ValidationError(f"fallback_fraction must be in (0, 1], got {fallback_fraction!r}")
        if not reconnect_interval > 0 or not op_timeout > 0 or not hold_ttl > 0:
            raise ValidationError("reconnect_interval, op_timeout and hold_ttl must be > 0")
        self._redis = redis_asyncio("RedisStore")
        if isinstance(url_or_client, str):
            check_url(url_or_client, "Redis")
        self._url = url_or_client if isinstance(url_or_client, str) else None
        self._client: Redis | None = None if isinstance(url_or_client, str) else url_or_client
        self.key, self.prefix, self.use_redis_time = key, prefix, use_redis_time
        self.fallback_fraction, self.reconnect_interval = fallback_fraction, reconnect_interval
        self.op_timeout, self.hold_ttl = op_timeout, hold_ttl
        # what sends the store to its fallback: any Redis failure, the network's or a script's
        self._errors = (self._redis.RedisError, OSError, asyncio.TimeoutError)
        base = f"{prefix}{{{key}}}:"
        self._zset = base  # the log: one sorted set, named after the longest window
        self._pause, self._hwm, self._scrolls = base + "pause", base + "hwm", base + "keepalive"
        self._own = Log([])  # this process's admissions at the full counts (estimates)
        self._fallback = MemoryStore()  # the same admissions at the reduced counts
        self._member = f"{uuid.uuid4().hex[:12]}:{{}}:{{}}"  # token:number:tag
        self._ids, self._retry_at = itertools.count(), -math.inf
        self._pending: list[Entry] = []  # fallback admissions not yet in Redis
        #: objects counted since the last send, by (month, day), and the reservations they
        #: settle; then the batches sent and not yet answered, in order: (number,
        #: (month, day), counts, reservations)
        self._unsent: dict[tuple[str, str], dict[str, int]] = {}
        self._settled: list[str] = []
        self._outbox: list[Batch] = []
        self._batches = itertools.count(1)
        self._sender = self._member.split(":", 1)[0]
        self._objects_lock = asyncio.Lock()
        #: the counts Redis last answered (what the fallback adds this process's to)
        self._shared: ObjectCounts | None = None
        self._objects_now = -math.inf  # the latest time objects were counted or read at
        self._objects = base + "objects:"
        self._holds = self._objects + "holds"
        self._bg: set[asyncio.Task[None]] = set()
        self._scripts: dict[str, Any] = {}

    #: the name a key's shared log goes by (a hash of the API key): every process of the key
    #: must agree on it, so it is the store's
    key_name = staticmethod(key_name)

    @classmethod
    def for_key(cls, url_or_client: str | Redis, client_key: str, **options: Any) -> RedisStore:
        """The store every user of API key ``client_key`` shares (named by :meth:`key_name`,
        never the key itself); ``options`` as the constructor's."""
        return cls(url_or_client, key=key_name(client_key), **options)

    def _setup(self, specs: list[WindowSpec]) -> None:
        self._zset += max(specs, key=lambda s: s.span).name if specs else ""
        self.log = self._own = Log(specs)
        shortest = min((s.period for s in specs), default=0.0)
        reduced = [copy.copy(s) for s in specs]
        for s in reduced:
            s.count = max(1, math.floor(s.count * self.fallback_fraction))
            s.paced = s.period == shortest  # pacing the day would space requests for nothing
        self._fallback.bind(reduced)
        # one log, two views (the full counts and the reduced): the deques are shared
        self._fallback.log.times, self._fallback.log.tags = self._own.times, self._own.tags

    def configure(self, name: str, *, count: int | None = None, paced: bool | None = None) -> None:
        self._own.configure(name, count, paced)
        if count is not None:
            self._fallback.log.configure(name, math.floor(count * self.fallback_fraction), None)

    async def _call(self, now: float, body: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script at ``now`` (its ARGV[1]; "" for Redis' clock); None when Redis fails,
        which sends the store to its fallback."""
        if self._client is None:
            self._client = redis_client(self._url or "", "RedisStore", timeout=self.op_timeout)
        script = self._scripts.get(body)
        if script is None or script.registered_client is not self._client:
            script = self._scripts[body] = self._client.register_script(body)
        args = ["" if self.use_redis_time else round(now * _US), *args]
        try:
            async with asyncio.timeout(self.op_timeout):
                return await script(keys=keys, args=args)
        except self._errors as exc:
            self._enter_fallback(now, exc)
            return None

    def _spawn(self, call: Awaitable[Any]) -> None:
        """Run ``call`` in the background; a failure is the safe side (see each caller)."""

        async def quiet() -> None:
            with contextlib.suppress(*self._errors):
                await asyncio.wait_for(call, self.op_timeout)

        task = asyncio.get_running_loop().create_task(quiet())
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)

    async def acquire(self, now: float, tag: str, keepalive: KeepAlive | None = None) -> Answer:
        if self._shape is None:
            raise ClientStateError("RedisStore.acquire() before bind(): give it to a Scheduler")
        if self.degraded is not None:
            if now < self._retry_at:
                answer = self._fallback.take(now, tag, keepalive)
                if answer.ticket is None:
                    return answer
                entry = Entry(cast(float, answer.ticket), self._member.format(next(self._ids), tag))
                self._pending.append(entry)
                return Answer(entry, now)
            self._retry_at = now + self.reconnect_interval  # one attempt at a time
        call = asyncio.ensure_future(self._admit(now, tag, keepalive))
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            # the caller gave up while Redis decided: an admission made meanwhile goes back
            def undo(c: asyncio.Future[Answer]) -> None:
                if not c.cancelled() and c.exception() is None:
                    self.refund(c.result().ticket, tag)

            call.add_done_callback(undo)
            raise

    async def _admit(self, now: float, tag: str, keepalive: KeepAlive | None) -> Answer:
        specs, member = self._own.specs, self._member.format(next(self._ids), tag)
        kept, args = checked(specs), [member, len(specs)]
        for w in specs:
            pace = w.span / w.count if w.paced else 0.0
            # whole microseconds, rounded up: the window enforced is never shorter than asked
            args += [w.count, math.ceil(w.span * _US), math.ceil(pace * _US), int(w in kept)]
        args += [keepalive.token, round(keepalive.horizon * _US)] if keepalive else ["", 0]
        sent = self._pending[:]  # the fallback's admissions not yet in Redis go first
        args += [round(now * _US), *(x for e in sent for x in (e.member, round(e.at * _US)))]
        keys = [self._zset, self._pause, self._hwm, self._scrolls]
        if (reply := await self._call(now, ACQUIRE, keys, args)) is None:
            return Answer(None, now)  # time passed in the attempt: decide again
        ok, r_now, r_wait, why, *used = reply
        self._pending = [p for p in self._pending if p not in sent]
        self._restored()  # back, with the admissions made meanwhile
        self.seen = {w.name: int(u) for w, u in zip(specs, used, strict=False)}
        # the script's time: absolute on the client's time line; on Redis' clock, differences
        at = now if self.use_redis_time else int(r_now) / _US
        if int(ok):
            # the fallback's log shares _own's deques: one record, and the scroll's due time
            return Answer(Entry(self._fallback.note(at, tag, keepalive), member), at)
        i, n = int(why), len(specs)
        name = specs[i - 1].name if 0 < i <= n else "pause" if i == n + 1 else "keepalive"
        return Answer(None, at + (int(r_wait) - int(r_now)) / _US, name)

    def _enter_fallback(self, now: float, exc: BaseException) -> None:
        self._retry_at = now + self.reconnect_interval
        if self.degraded is None:
            why = f"{type(exc).__name__}: {exc}"
            why = hide_password(why, self._url) if self._url else why
            self.degraded = (
                f"Redis unreachable ({why}); local limit at {self.fallback_fraction:.0%}"
                " of each window, paced"
            )
            self.log, self.seen = self._fallback.log, {}

    def _restored(self) -> None:
        """Redis answered: leave the fallback (admissions made meanwhile go with the next)."""
        if self.degraded is not None:
            self.degraded, self.log = None, self._own

    def refund(self, ticket: object, tag: str) -> None:
        # on failure the entry expires with its window: counting it is the safe side
        if isinstance(ticket, Entry):
            self.log.remove(ticket.at, tag)
            self._pending = [p for p in self._pending if p.member != ticket.member]
            if self.degraded is None and self._client is not None:
                self._spawn(self._client.zrem(self._zset, ticket.member))

    def drop_keepalive(self, token: str) -> None:
        self._fallback.drop_keepalive(token)
        if self.degraded is None and self._client is not None:
            self._spawn(self._client.zrem(self._scrolls, token))

    def pause(self, until: float, now: float) -> None:
        """Share the pause: with Redis time it lands ``until - now`` after Redis' TIME (a
        little after the 429 was seen, which errs on the safe side)."""
        if until > now and self.degraded is None:
            self._spawn(self._call(now, PAUSE, [self._pause], [round((until - now) * _US)]))

    async def tally(self, now: float, window: str) -> dict[str, int]:
        """Every process's admissions per tag; while Redis is unreachable, this process's."""
        span = self.log.spec(window).span
        if self.degraded is None:
            flat = await self._call(now, TALLY, [self._zset], [math.ceil(span * _US)])
            if flat is not None:
                return cast(dict[str, int], json.loads(flat))
        return self.log.tally(now, span)

    async def add_objects(
        self, now: float, kind: str, count: int, ticket: object = None
    ) -> ObjectCounts:
        """Every process's counts after adding these; while Redis is unreachable, what it
        last said plus this process's counts since (kept to be added once it is back)."""
        unsent = self._unsent.setdefault(_period(now), {})  # kept before any await
        unsent[kind] = unsent.get(kind, 0) + count
        if isinstance(ticket, str):
            self._settled.append(ticket)  # ended by the batch that adds the count
        self.ledger.holds.drop(ticket)  # a reservation made while Redis was unreachable
        return await self._sync_objects(now)

    async def reserve(
        self, now: float, kind: str, want: int, least: int, allowance: Mapping[str, int]
    ) -> Grant:
        """Every process's reservations and counts in one script; while Redis is
        unreachable, this process's estimate (``_estimate``) and its own reservations."""
        pairs = [(name, allowance[name]) for name in (ALL, kind) if name in allowance]
        if self.degraded is None or now >= self._retry_at:
            if self._unsent or self._outbox or self._settled:
                await self._sync_objects(now, read=False)  # this process's counts first
            ticket = f"{self._sender}:o{next(self._ids)}"
            keys = [f"{self._objects}m:{_period(now)[0]}", self._holds]
            args = [ticket, kind, want, least, round(self.hold_ttl * _US)]
            call = asyncio.ensure_future(
                self._call(now, RESERVE, keys, args + [x for pair in pairs for x in pair])
            )
            try:
                reply = await asyncio.shield(call)
            except asyncio.CancelledError:
                # the caller gave up while Redis decided: a reservation made meanwhile goes back
                call.add_done_callback(lambda _: self.release_objects(ticket))
                raise
            if reply is not None:
                self._restored()
                size, free, index = (int(x) for x in reply)
                return Grant(ticket if size else None, size, free, pairs[index - 1][0])
        return self.ledger.reserve(self._estimate(now), kind, want, least, allowance)

    def release_objects(self, ticket: object) -> None:
        self.ledger.holds.drop(ticket)
        if isinstance(ticket, str) and self._client is not None:
            self._spawn(self._client.hdel(self._holds, ticket))  # else it lapses (hold_ttl)

    async def object_counts(self, now: float) -> ObjectCounts:
        return await self._sync_objects(now)

    async def _sync_objects(self, now: float, *, read: bool = True) -> ObjectCounts:
        """Send what was counted and not yet added, in order; the current period's counts:
        Redis', or (unreachable, or known to be down) the estimate (``_estimate``)."""
        self._objects_now = max(self._objects_now, now)
        if self.degraded is None or now >= self._retry_at:
            async with self._objects_lock:  # one batch at a time, in the order numbered
                if self.degraded is None or now >= self._retry_at:  # another may have failed
                    counts = await self._send_objects(now, read)
                    if counts is not None:
                        return counts
        return self._estimate(now)

    async def _send_objects(self, now: float, read: bool) -> ObjectCounts | None:
        """Number what was counted since the last send, send every batch not yet answered,
        oldest first, then (``read``) the current period's counts; None on a failure (the
        batches not answered stay, to go again)."""
        current, settled = _period(now), self._settled
        if settled and not self._unsent:
            self._unsent[current] = {}
        for period, adds in self._unsent.items():
            self._outbox.append(Batch(next(self._batches), period, adds, settled))
            settled = []
        self._unsent, self._settled, reply = {}, [], None
        while self._outbox:
            batch = self._outbox[0]
            if (reply := await self._objects_call(now, batch)) is None:
                return None
            del self._outbox[0]  # answered: added now, or before (a lost answer)
            if batch.period != current:
                reply = None
        if reply is None:
            if not read:
                return None
            if (reply := await self._objects_call(now, Batch(0, current, {}, []))) is None:
                return None
        self._restored()
        month, day = (cast(dict[str, int], json.loads(x)) for x in reply)
        self._shared = ObjectCounts.of(now, month, day)
        return self._shared

    async def _objects_call(self, now: float, batch: Batch) -> Any:
        month, day = batch.period
        keys = [f"{self._objects}m:{month}", f"{self._objects}d:{day}"]
        keys += [self._objects + "sent", self._holds]
        args = [_KEEP_MONTH_MS, _KEEP_DAY_MS, self._sender, batch.number, len(batch.ends)]
        args += [*batch.ends, *(x for kind, n in batch.adds.items() for x in (kind, n))]
        return await self._call(now, OBJECTS, keys, args)

    def _estimate(self, now: float) -> ObjectCounts:
        """Without Redis: the counts it last answered, plus this process's not yet added
        (a batch whose answer was lost may be counted twice here: the safe side)."""
        counts = ObjectCounts.empty(now) if self._shared is None else self._shared.at(now)
        for batch in self._outbox:
            counts = counts.plus(*batch.period, batch.adds)
        for (month, day), adds in self._unsent.items():
            counts = counts.plus(month, day, adds)
        return counts

    @property
    def status(self) -> str:
        return "redis-fallback" if self.degraded is not None else "redis"

    async def aclose(self) -> None:
        await asyncio.gather(*self._bg, return_exceptions=True)
        if (self._unsent or self._outbox) and self._client is not None:
            # the counts not yet added get one last try, whatever the reconnect interval
            self._retry_at = -math.inf
            await self._sync_objects(self._objects_now, read=False)
        if self._url is not None and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def __repr__(self) -> str:
        return f"RedisStore(key={self.key!r}, {self.status})"
