"""Security: the password of a database or Redis URL shows in no log line, repr, error or
event: the rate limiter's ``RedisStore``, the webhooks'
``RedisDeduplicator``, the sync's stores (``open_destination``) and the client's ``base_url``.

Every logger is captured at DEBUG (``debug_logs``). A password split by a parser (an
unescaped ``/ ? # @``) is looked for piece by piece: such URLs are refused up front, or
pieces of the password would show as a port, a host or a socket path. The command's own
output: test_url_passwords_cli.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from asyncwifi import Client, ScaledClock
from asyncwifi._auth import hide_password, redact_url
from asyncwifi._transport import AiohttpTransport
from asyncwifi.engine import DestinationUnavailableError, open_destination
from asyncwifi.errors import ConfigurationError, ValidationError
from asyncwifi.ratelimit import Limit, Limits, RedisStore, Scheduler, ThrottleEvent
from asyncwifi.webhooks import RedisDeduplicator
from tests.security._scan import (
    HEAD,
    PASSWORD,
    SPLITTERS,
    TAIL,
    closed_port,
    error_text,
    url_leaks,
)
from tests.sync.conftest import pg_lock, require_postgres

SPLIT = [f"{HEAD}{sep}{TAIL}" for sep in SPLITTERS]


# -- the helpers ---------------------------------------------------------------------------


@pytest.mark.parametrize("password", [PASSWORD, *SPLIT], ids=["plain", *SPLITTERS])
@pytest.mark.parametrize(
    "template",
    [
        "postgresql://user:{pw}@db.example:5432/app",
        "postgres://user:{encoded}@db.example/app?sslmode=require",
        "postgresql://db.example/app?sslmode=require&password={pw}",
        "postgresql://db.example/app?sslpassword={pw}",
        "redis://:{pw}@cache.example:6379/0",
        "rediss://user:{pw}@cache.example/0",
        "redis://cache.example/0?password={pw}&db=1",
        "unix://user:{pw}@/run/redis.example.sock?db=0",
        "user:{pw}@db.example/app",  # the scheme forgotten
    ],
)
def test_redact_url_hides_the_password_in_every_form(template: str, password: str) -> None:
    url = template.format(pw=password, encoded=quote(password, safe=""))
    shown = redact_url(url)
    assert not url_leaks(shown), shown
    assert "***" in shown
    assert "example" in shown  # the host still says where
    # an error message quoting the URL or the password, raw or percent-decoded
    text = f"cannot connect to {url}; password {password!r}"
    assert not url_leaks(hide_password(text, url))


@pytest.mark.parametrize(
    "url", ["sqlite:///var/lib/x.db", "postgresql://user@db.example/app", "redis://h:6379/0"]
)
def test_redact_url_leaves_a_url_without_a_password_as_it_is(url: str) -> None:
    assert redact_url(url) == url


# -- Redis ---------------------------------------------------------------------------------


def _limits() -> Limits:
    return Limits(minute=Limit(8, 60.0), day=Limit(1_000, 86_400.0))


async def _use_store(store: RedisStore, events: list[ThrottleEvent]) -> list[str]:
    """Three admissions through ``store``; what the store and its scheduler show."""
    sched = Scheduler(_limits(), clock=ScaledClock(1000), store=store)
    sched.on_throttle.append(events.append)
    shown = []
    try:
        async with asyncio.timeout(10):
            for _ in range(3):
                async with sched.slot():
                    pass
    except Exception as exc:  # a store that fails: its error must not tell either
        shown.append(error_text(exc))
    shown += [repr(store), str(store.degraded), repr(sched.quota), repr(events)]
    await sched.aclose()
    return shown


def _redis_urls(tmp_path: Path, password: str) -> list[str]:
    port = closed_port()
    return [
        f"redis://user:{password}@127.0.0.1:{port}/0",
        f"redis://:{password}@127.0.0.1:{port}",
        f"unix://user:{password}@{tmp_path}/none.sock",
    ]


@pytest.mark.parametrize("form", ["userinfo", "no user", "query", "unix socket", "encoded"])
async def test_an_unreachable_redis_store_shows_no_password(
    form: str, tmp_path: Path, debug_logs: Callable[[], str]
) -> None:
    port = closed_port()
    url = {
        "userinfo": f"redis://user:{PASSWORD}@127.0.0.1:{port}/0",
        "no user": f"redis://:{PASSWORD}@127.0.0.1:{port}",
        "query": f"redis://127.0.0.1:{port}/0?password={PASSWORD}",
        "unix socket": f"unix://user:{PASSWORD}@{tmp_path}/none.sock",
        "encoded": f"redis://user:{quote(HEAD + '/' + TAIL, safe='')}@127.0.0.1:{port}/0",
    }[form]
    events: list[ThrottleEvent] = []
    store = RedisStore(url, key="acct", use_redis_time=False, op_timeout=0.5)
    shown = await _use_store(store, events)
    assert store.degraded is not None  # it did fall back, and said so
    assert [e.kind for e in events][:1] == ["fallback"]
    assert "using a conservative local limit" in debug_logs()  # the "fallback" log line
    assert not url_leaks("\n".join(shown) + debug_logs())


@pytest.mark.parametrize("password", SPLIT, ids=SPLITTERS)
async def test_a_redis_url_a_parser_would_split_never_shows_a_piece_of_the_password(
    password: str, tmp_path: Path, debug_logs: Callable[[], str]
) -> None:
    """Unescaped, a "/" ends the host part early: redis-py reads a piece of the password
    as the port (a ValueError quoting it) or as the socket's path (in every connection
    error). Refusing such a URL (ValidationError) is fine; showing a piece is not."""
    shown: list[str] = []
    for url in _redis_urls(tmp_path, password):
        try:
            store = RedisStore(url, key="acct", use_redis_time=False, op_timeout=0.5)
        except ValidationError as exc:
            shown.append(error_text(exc))
        else:
            shown += await _use_store(store, [])
        try:
            dedup = RedisDeduplicator(url)
        except ValidationError as exc:
            shown.append(error_text(exc))
        else:
            with pytest.raises(Exception) as caught:
                await dedup.claim("n-1", 0.0)
            shown += [error_text(caught.value), repr(dedup)]
            await dedup.aclose()
    assert not url_leaks("\n".join(shown) + debug_logs())


async def test_a_redis_error_that_quotes_the_url_is_shown_without_its_password(
    monkeypatch: pytest.MonkeyPatch, debug_logs: Callable[[], str]
) -> None:
    """A library (or a later redis-py) may quote the URL or the password in its error:
    the store's fallback message, event and log line still hide it."""
    import redis.asyncio
    from redis.exceptions import ConnectionError as RedisConnectionError

    url = f"redis://user:{quote(HEAD + '#' + TAIL, safe='')}@cache.example:6379/0"

    class Script:
        registered_client: Any = None

        async def __call__(self, **kw: Any) -> Any:
            raise RedisConnectionError(f"cannot reach {url} (AUTH user {HEAD}#{TAIL})")

    class Quoting:
        def register_script(self, body: str) -> Script:
            script = Script()
            script.registered_client = self
            return script

        async def aclose(self) -> None:
            pass

    monkeypatch.setattr(redis.asyncio.Redis, "from_url", lambda *a, **kw: Quoting())
    events: list[ThrottleEvent] = []
    store = RedisStore(url, key="acct", use_redis_time=False, op_timeout=0.5)
    shown = await _use_store(store, events)
    assert store.degraded is not None
    assert "cannot reach" in store.degraded
    assert not url_leaks("\n".join(shown) + debug_logs())


@pytest.mark.redis
async def test_redis_refusing_the_credentials_shows_them_nowhere(
    debug_logs: Callable[[], str],
) -> None:
    """The real Redis on 6379 has no user "nobody-here": AUTH fails (WRONGPASS)."""
    from tests.ratelimit.rlhelpers import require_redis

    require_redis()
    url = f"redis://nobody-here:{PASSWORD}@127.0.0.1:6379/0"
    events: list[ThrottleEvent] = []
    store = RedisStore(url, key="acct", use_redis_time=False, op_timeout=2.0)
    shown = await _use_store(store, events)
    assert store.degraded is not None
    assert "AuthenticationError" in store.degraded
    assert not url_leaks("\n".join(shown) + debug_logs())


# -- PostgreSQL and SQLite -----------------------------------------------------------------


async def _use_database(url: str) -> list[str]:
    """Open the store of ``url``; what it and its errors show."""
    try:
        store = open_destination(url)
    except ValidationError as exc:  # refused up front: fine, if it says nothing
        return [error_text(exc)]
    shown = [repr(store), str(store)]
    try:
        async with asyncio.timeout(20):
            await store.open()
    except Exception as exc:
        shown.append(error_text(exc))
    finally:
        await store.close()
    return shown


@pytest.mark.parametrize(
    "password",
    [PASSWORD, quote(SPLIT[0], safe=""), *SPLIT],
    ids=["plain", "encoded", *SPLITTERS],
)
async def test_an_unreachable_postgres_store_shows_no_password(
    password: str, debug_logs: Callable[[], str]
) -> None:
    port = closed_port()
    shown: list[str] = []
    for url in (
        f"postgresql://user:{password}@127.0.0.1:{port}/db",
        f"postgres://127.0.0.1:{port}/db?sslmode=disable&password={password}",
    ):
        shown += await _use_database(url)
    assert any("DestinationUnavailableError" in s or "ValidationError" in s for s in shown)
    assert not url_leaks("\n".join(shown) + debug_logs())


async def test_a_database_url_of_no_known_scheme_is_refused_without_its_password() -> None:
    for url in (f"user:{PASSWORD}@127.0.0.1/db", f"mysql://user:{PASSWORD}@127.0.0.1/db"):
        with pytest.raises(ValidationError) as caught:
            open_destination(url)
        assert not url_leaks(error_text(caught.value))


async def test_a_postgres_error_that_quotes_the_dsn_is_shown_without_its_password(
    monkeypatch: pytest.MonkeyPatch, debug_logs: Callable[[], str]
) -> None:
    import asyncpg

    async def refuse(dsn: str, **kw: Any) -> Any:
        raise OSError(f"could not connect to {dsn}")

    monkeypatch.setattr(asyncpg, "connect", refuse)
    url = f"postgresql://user:{PASSWORD}@db.example/app"
    store = open_destination(url)
    with pytest.raises(DestinationUnavailableError) as caught:
        await store.open()
    assert "could not connect to postgresql://user:***@db.example/app" in str(caught.value)
    assert not url_leaks(str(caught.value) + repr(caught.value) + debug_logs())


@pytest.mark.postgres
async def test_postgres_refusing_the_role_shows_no_password(
    debug_logs: Callable[[], str],
) -> None:
    require_postgres()
    with pg_lock(exclusive=False):  # not while the restart test has the server down
        shown = await _use_database(f"postgresql://nobody_here:{PASSWORD}@127.0.0.1:5432/postgres")
    assert any("nobody_here" in s for s in shown)  # the server's refusal did come back
    assert not url_leaks("\n".join(shown) + debug_logs())


# -- the client's base URL -----------------------------------------------------------------


def test_a_base_url_with_credentials_is_shown_without_its_password() -> None:
    client = Client("ck_key", "a-secret", base_url=f"https://user:{PASSWORD}@api.example.net")
    assert "api.example.net" in repr(client)
    assert not url_leaks(repr(client))
    with pytest.raises(ConfigurationError) as caught:  # the scheme forgotten
        AiohttpTransport(f"user:{PASSWORD}@api.example.net")
    assert not url_leaks(error_text(caught.value))
