"""Token lifecycle: single flight, refresh before exp, one relogin on 403, no storm, no leak."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from asyncwifi._auth import Secret, Token, TokenManager, TokenState, read_jwt_claims
from asyncwifi.errors import ClientStateError
from tests._virtualclock import VirtualClock

#: the stepping clock's start (any time: tokens are judged against it)
T0 = 1_000_000.0


def jwt(iat: float, exp: float) -> str:
    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256'})}.{part({'aud': 'service', 'iat': iat, 'exp': exp})}.sig"


class Server:
    def __init__(self, clock: VirtualClock, lifetime: float = 86_400.0) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.logins = 0
        self.logouts: list[Token] = []

    async def login(self) -> str:
        self.logins += 1
        await asyncio.sleep(0.001)  # let every waiter pile up behind the first login
        now = self.clock.now()
        return jwt(now, now + self.lifetime)

    async def logout(self, token: Token) -> None:
        self.logouts.append(token)


async def test_many_coroutines_make_one_login() -> None:
    clock = VirtualClock.stepping(T0)
    server = Server(clock)
    tokens = TokenManager(server.login, server.logout, clock=clock)
    got = await asyncio.gather(*(tokens.get() for _ in range(1000)))
    assert server.logins == 1
    assert len({t.generation for t in got}) == 1
    assert tokens.state is TokenState.VALID


async def test_refresh_before_exp() -> None:
    clock = VirtualClock.stepping(T0)
    server = Server(clock, lifetime=3600.0)
    tokens = TokenManager(server.login, server.logout, clock=clock, refresh_margin=300.0)
    first = await tokens.get()
    clock.step(3600 - 360 - 1)  # margin is min(300, 10% of 3600) = 300 s before exp
    assert (await tokens.get()) is first
    clock.step(100)
    second = await tokens.get()
    assert second.generation == first.generation + 1
    assert server.logins == 2


async def test_a_403_relogs_once_and_a_refused_new_token_does_not_storm() -> None:
    clock = VirtualClock.stepping(T0)
    server = Server(clock)
    tokens = TokenManager(server.login, server.logout, clock=clock, relogin_cooldown=60.0)
    token = await tokens.get()
    # a 403 right after login (a revocation, say): one new login is due
    assert tokens.rejected(token) is True
    # a second 403 on the same token by another coroutine: still just one login
    assert tokens.rejected(token) is True
    await asyncio.gather(*(tokens.get() for _ in range(50)))
    assert server.logins == 2
    # a 403 on the replaced token: retry with the newer one, no login
    assert tokens.rejected(token) is True
    # the new token is refused too, moments later: a permission refusal, no login
    fresh = await tokens.get()
    assert tokens.rejected(fresh) is False
    assert server.logins == 2
    # but when a forced login's retry worked, the next 403 (a second revocation) relogs
    tokens.relogin_worked()
    assert tokens.rejected(fresh) is True
    fresh = await tokens.get()
    assert server.logins == 3
    assert tokens.rejected(fresh) is False
    assert server.logins == 3
    # a cooldown later, a 403 may again be an expiry: one more login, at most
    clock.step(61)
    assert tokens.rejected(fresh) is True
    await tokens.get()
    assert server.logins == 4


async def test_logout_and_close() -> None:
    clock = VirtualClock.stepping(T0)
    server = Server(clock)
    tokens = TokenManager(server.login, server.logout, clock=clock)
    assert await tokens.logout() is False
    await tokens.get()
    assert await tokens.logout() is True
    assert tokens.state is TokenState.REVOKED
    assert len(server.logouts) == 1
    await tokens.get()
    assert server.logins == 2
    tokens.close()
    with pytest.raises(ClientStateError):
        await tokens.get()


def test_secrets_never_show() -> None:
    secret = Secret("s3cr3t-value")
    for shown in (repr(secret), str(secret), f"{secret}"):
        assert "s3cr3t" not in shown
    token = Token("header.payload.signature", generation=1, issued_at=0, expires_at=10)
    assert "payload" not in repr(token)
    assert token.bearer == "Bearer header.payload.signature"


def test_read_jwt_claims_is_tolerant() -> None:
    assert read_jwt_claims(jwt(1, 2))["exp"] == 2
    assert read_jwt_claims("not-a-jwt") == {}
    assert read_jwt_claims("a.!!!.c") == {}
