"""Token lifecycle (spec §3, "Access token"): one login at a time, refresh before ``exp``.

The lifecycle is a transition table (h11 style); an illegal move raises. The JWT's claims
are read, not verified (the client cannot know the signing key): ``exp`` drives the
refresh, and a token whose claims cannot be read is given the documented one day.
Tokens and secrets live in :class:`Secret`, whose repr never shows them; the password of
a database or Redis URL is shown only through :func:`redact_url` and :func:`hide_password`.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import json
import logging
import re
from collections.abc import Awaitable, Callable
from urllib.parse import unquote

from asyncwifi._clock import Clock
from asyncwifi.errors import ClientStateError, ValidationError

__all__ = [
    "Secret",
    "Token",
    "TokenManager",
    "TokenState",
    "check_url",
    "hide_password",
    "read_jwt_claims",
    "redact_url",
]

log = logging.getLogger("asyncwifi.auth")

# spec §5.4: the token expires after one day
TOKEN_LIFETIME = 86_400.0


class Secret:
    """A string that never shows itself in a repr, a str() or a log line."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself, for the one place that sends it."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a Secret cannot be pickled")


#: a password in a URL's query (asyncpg reads ``password`` and ``sslpassword``, redis-py
#: ``password``): the value up to the next parameter (an unescaped "#" in it included)
_QUERY_PASSWORD = re.compile(r"(?i)([?&;](?:ssl)?password=)([^&;]*)")


def _userinfo_password(url: str) -> str | None:
    """The password of ``user:password@``: everything before the last ``@`` counts, so a
    password holding an unescaped ``/``, ``?``, ``#`` or ``@`` is still all of it."""
    rest = url.partition("://")[2] or url
    userinfo, at, _host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return None
    return userinfo.split(":", 1)[1]


def redact_url(url: str) -> str:
    """``url`` as it may be shown in a message, a repr or a log line: its password
    (``user:***@host``, ``?password=***``, ``?sslpassword=***``) hidden. When in doubt it
    hides more (an ``@`` in a query makes what precedes it look like a password)."""
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    password = _userinfo_password(url)
    if password is None:
        return url
    head, _, host = url.rpartition("@")
    return f"{head[: len(head) - len(password)]}***@{host}"


def hide_password(text: str, url: str) -> str:
    """``text`` (a library's error message, say) with the password of ``url`` hidden, in
    any form it may take there: the URL itself, the password raw or percent-decoded."""
    text = text.replace(url, redact_url(url))
    found = [m.group(2) for m in _QUERY_PASSWORD.finditer(url)]
    password = _userinfo_password(url)
    if password is not None:
        found.append(password)
    secrets = {form for value in found for form in (value, unquote(value)) if form}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def check_url(url: str, what: str) -> None:
    """``ValidationError`` for a URL whose password a parser would split: an ``@`` in it or
    in the rest of the URL (a ``/``, ``?`` or ``#`` in the password ends the host part
    early); pieces of the password would then show as the host, the port or the path in
    the libraries' error messages."""
    rest = url.partition("://")[2]
    host_end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    if rest.count("@") > 1 or "@" in rest[host_end:]:
        raise ValidationError(
            f"cannot tell the password from the rest of the {what} URL: percent-encode "
            "/ ? # @ in the password (%2F %3F %23 %40), and any @ after the host"
        )


class TokenState(enum.Enum):
    """States of the access token (spec §3)."""

    NONE = "none"
    VALID = "valid"
    EXPIRED = "expired"
    REVOKED = "revoked"
    CLOSED = "closed"


class _Ev(enum.Enum):
    LOGIN = "login"
    EXPIRE = "expire"
    REJECT = "reject"
    LOGOUT = "logout"
    CLOSE = "close"


# spec §3: (state, trigger) -> next state; a missing pair is an illegal move
_TRANSITIONS: dict[tuple[TokenState, _Ev], TokenState] = {
    (TokenState.NONE, _Ev.LOGIN): TokenState.VALID,
    (TokenState.VALID, _Ev.LOGIN): TokenState.VALID,
    (TokenState.VALID, _Ev.EXPIRE): TokenState.EXPIRED,
    (TokenState.VALID, _Ev.REJECT): TokenState.EXPIRED,
    (TokenState.VALID, _Ev.LOGOUT): TokenState.REVOKED,
    (TokenState.EXPIRED, _Ev.LOGIN): TokenState.VALID,
    (TokenState.EXPIRED, _Ev.EXPIRE): TokenState.EXPIRED,
    (TokenState.EXPIRED, _Ev.REJECT): TokenState.EXPIRED,
    (TokenState.REVOKED, _Ev.LOGIN): TokenState.VALID,
    (TokenState.NONE, _Ev.LOGOUT): TokenState.NONE,
    (TokenState.EXPIRED, _Ev.LOGOUT): TokenState.EXPIRED,
    (TokenState.REVOKED, _Ev.LOGOUT): TokenState.REVOKED,
    **{(state, _Ev.CLOSE): TokenState.CLOSED for state in TokenState},
}


def read_jwt_claims(token: str) -> dict[str, object]:
    """The payload claims of a JWT, unverified; ``{}`` when they cannot be read."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (ValueError, UnicodeError):
        return {}
    return claims if isinstance(claims, dict) else {}


class Token:
    """An access token with its expiry; ``generation`` counts the logins of one manager."""

    __slots__ = ("expires_at", "generation", "issued_at", "value")

    def __init__(self, value: str, *, generation: int, issued_at: float, expires_at: float) -> None:
        self.value = Secret(value)
        self.generation = generation
        self.issued_at = issued_at
        self.expires_at = expires_at

    @property
    def bearer(self) -> str:
        """The ``Authorization`` header value."""
        return "Bearer " + self.value.reveal()

    def __repr__(self) -> str:
        return f"Token(generation={self.generation}, expires_at={self.expires_at:.0f}, value=***)"


Login = Callable[[], Awaitable[str]]
Logout = Callable[[Token], Awaitable[None]]


class TokenManager:
    """Hands out a valid token; logs in once however many coroutines ask at the same time.

    ``refresh_margin``: a token is renewed this many seconds before its ``exp``.
    ``relogin_cooldown``: when a login forced by a refused token (403, or the 401 some
    gateways send) did not help (its retry was refused too), a refusal within this many
    seconds is a permission refusal and causes no further login; a
    refused endpoint costs at most one extra login per cooldown, however many calls hit it
    (no token storm). When the retry worked (an expiry or a revocation), the next 403 may
    force a login again at once, so back-to-back revocations are recovered from.
    """

    __slots__ = (
        "_attempts",
        "_clock",
        "_failed",
        "_forced_at",
        "_generation",
        "_lock",
        "_login",
        "_logout",
        "_token",
        "logins",
        "refresh_margin",
        "relogin_cooldown",
        "state",
    )

    def __init__(
        self,
        login: Login,
        logout: Logout,
        *,
        clock: Clock,
        refresh_margin: float = 300.0,
        relogin_cooldown: float = 60.0,
    ) -> None:
        self._login = login
        self._logout = logout
        self._clock = clock
        self._lock = asyncio.Lock()
        self._token: Token | None = None
        self._generation = 0
        self._forced_at: float | None = None
        #: logins finished, and the failure of the last one (shared with those who waited)
        self._attempts = 0
        self._failed: Exception | None = None
        #: how many logins this manager made
        self.logins = 0
        self.refresh_margin = refresh_margin
        self.relogin_cooldown = relogin_cooldown
        self.state = TokenState.NONE

    def _move(self, event: _Ev) -> None:
        try:
            self.state = _TRANSITIONS[(self.state, event)]
        except KeyError:
            raise ClientStateError(
                f"token manager: cannot {event.value} in state {self.state.value}"
            ) from None

    def _usable(self, now: float) -> Token | None:
        token = self._token
        if token is None or self.state is not TokenState.VALID:
            return None
        lifetime = token.expires_at - token.issued_at
        margin = min(self.refresh_margin, max(0.0, lifetime) * 0.1)
        if now >= token.expires_at - margin:
            self._move(_Ev.EXPIRE)
            return None
        return token

    def _check_open(self) -> None:
        if self.state is TokenState.CLOSED:
            raise ClientStateError("the client is closed")

    async def get(self) -> Token:
        """A valid token, logging in first when there is none or it is about to expire."""
        self._check_open()
        token = self._usable(self._clock.now())
        if token is not None:
            return token
        tried = self._attempts
        async with self._lock:  # single flight: the first caller logs in, the rest reuse it
            token = self._usable(self._clock.now())
            if token is not None:
                return token
            self._check_open()
            if self._failed is not None and self._attempts != tried:
                # the login this caller waited for failed: its outcome too (a wrong base
                # URL costs one login's attempts, not one per waiting coroutine)
                raise self._failed
            try:
                value = await self._login()
            except Exception as exc:
                self._failed = exc
                self._attempts += 1
                raise
            self._failed = None
            self._attempts += 1
            now = self._clock.now()
            claims = read_jwt_claims(value)
            issued = claims.get("iat")
            expires = claims.get("exp")
            issued_at = float(issued) if isinstance(issued, int | float) else now
            expires_at = (
                float(expires) if isinstance(expires, int | float) else issued_at + TOKEN_LIFETIME
            )
            self._generation += 1
            self.logins += 1
            # Trust our own clock for "issued": the server's clock may differ.
            self._token = Token(
                value,
                generation=self._generation,
                issued_at=now,
                expires_at=now + max(0.0, expires_at - issued_at),
            )
            self._move(_Ev.LOGIN)
            log.debug("logged in (token generation %d)", self._generation)
            return self._token

    def rejected(self, token: Token, status: int = 403) -> bool:
        """A request with ``token`` was refused (``status``: 403, or the 401 some gateways
        send for a revoked token): is one new login (or newer token) worth a retry?

        True when a newer token exists already, or when no 403 has forced a login within
        ``relogin_cooldown`` (``token`` is then marked expired, and the next :meth:`get`
        logs in once). False when a 403 forced a login moments ago and the new token is
        refused too: the 403 is a refusal, not an expiry.
        """
        current = self._token
        if current is None or current.generation != token.generation:
            return current is not None
        if self.state is not TokenState.VALID:
            return True
        now = self._clock.now()
        if self._forced_at is not None and now - self._forced_at < self.relogin_cooldown:
            return False
        self._forced_at = now
        self._move(_Ev.REJECT)
        log.info(
            "token generation %d refused with %d; one new login is due", token.generation, status
        )
        return True

    def relogin_worked(self) -> None:
        """The retry after a 403-forced login succeeded: that 403 was an expiry or a
        revocation, not a refusal, so the next 403 may force a login again at once."""
        self._forced_at = None

    async def logout(self) -> bool:
        """Revoke the current token on the server (spec §4.1); False when there was none."""
        async with self._lock:
            token = self._token
            if token is None or self.state is not TokenState.VALID:
                return False
            await self._logout(token)
            self._move(_Ev.LOGOUT)
            self._token = None
            return True

    def close(self) -> None:
        """Forget the token; every later :meth:`get` raises."""
        self._token = None
        self._move(_Ev.CLOSE)

    def __repr__(self) -> str:
        return f"TokenManager(state={self.state.value}, logins={self.logins})"
