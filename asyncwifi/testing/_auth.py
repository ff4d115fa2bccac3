"""Access tokens, sans-I/O: HS256 JWTs issued at login, checked on every request (spec §5).

A token is refused (403 ``Access Denied``) when it is missing, malformed, signed with another
key, not for the ``service`` audience, expired (``exp`` on the clock's time line), revoked by a
logout, or issued before an early revocation (the ``revoke_tokens_every`` fault).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["ISSUER", "TokenAuthority", "TokenRejected", "claimed_organization"]

#: the ``iss`` claim of the simulator's tokens
ISSUER = "https://sts.simulator.asyncwifi.invalid"
_HEADER = {"alg": "HS256", "typ": "JWT"}


class TokenRejected(Exception):
    """A bearer token was refused; ``reason`` says why (counted, never sent to the client)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _parse(authorization: str | None) -> tuple[str, dict[str, Any], dict[str, Any], bytes]:
    """A bearer token's signed part, header, claims and signature (not verified), or raise."""
    if not authorization:
        raise TokenRejected("missing")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise TokenRejected("malformed")
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenRejected("malformed")
    try:
        header = msgspec.json.decode(_unb64(parts[0]))
        claims = msgspec.json.decode(_unb64(parts[1]))
        sig = _unb64(parts[2])
    except (ValueError, msgspec.DecodeError):
        raise TokenRejected("malformed") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenRejected("malformed")
    return parts[0] + "." + parts[1], header, claims, sig


def claimed_organization(authorization: str | None) -> str | None:
    """The ``organizationId`` a bearer token claims, unverified (the gateway's routing to
    an account's quota; the account's authority then verifies it), or ``None``."""
    try:
        org = _parse(authorization)[2].get("organizationId")
    except TokenRejected:
        return None
    return org if isinstance(org, str) else None


@dataclass(slots=True)
class _Issued:
    iat: float
    exp: int


class TokenAuthority:
    """Issues, verifies and revokes the simulator's JWTs."""

    __slots__ = ("_issued", "_key", "_revoked", "_serial", "organization", "ttl", "user_id")

    def __init__(self, *, key: bytes, ttl: float, organization: str, user_id: str) -> None:
        self._key = key
        #: token lifetime in clock seconds (spec §3: one day)
        self.ttl = ttl
        self.organization = organization
        #: the service user's id (the ``id``/``sub`` claims)
        self.user_id = user_id
        self._issued: dict[str, _Issued] = {}
        self._revoked: set[str] = set()
        self._serial = 0

    def issue(self, now: float) -> str:
        """A new signed token valid from ``now`` for ``ttl`` clock seconds."""
        self._serial += 1
        jti = hashlib.sha256(self._key + f":{self._serial}".encode()).hexdigest()[:32]
        iat = math.floor(now)
        exp = math.floor(now + self.ttl)
        claims = {
            "iss": ISSUER,
            "aud": "service",
            "sub": self.user_id,
            "id": self.user_id,
            "organizationId": self.organization,
            "role": "organization_manager",
            "scopes": [
                "organization_read",
                "organization_write",
                "hotspots_read",
                "hotspots_write",
                "segments_read",
                "events_read",
            ],
            "iat": iat,
            "exp": exp,
            "jti": jti,
        }
        head = _b64(msgspec.json.encode(_HEADER)) + "." + _b64(msgspec.json.encode(claims))
        sig = hmac.new(self._key, head.encode("ascii"), hashlib.sha256).digest()
        self._issued[jti] = _Issued(now, exp)
        return head + "." + _b64(sig)

    def verify(self, authorization: str | None, now: float, revoked_before: float) -> str:
        """The token's ``jti`` if ``authorization`` carries a valid bearer token, else raise.

        ``revoked_before``: tokens issued before this clock time are revoked (a fault).
        """
        signed, header, claims, sig = _parse(authorization)
        if header.get("alg") != "HS256":
            raise TokenRejected("signature")
        expected = hmac.new(self._key, signed.encode("ascii"), hashlib.sha256).digest()
        if not hmac.compare_digest(sig, expected):
            raise TokenRejected("signature")
        jti = claims.get("jti")
        if not isinstance(jti, str) or jti not in self._issued or claims.get("aud") != "service":
            raise TokenRejected("signature")
        record = self._issued[jti]
        if now >= record.exp:
            raise TokenRejected("expired")
        if jti in self._revoked:
            raise TokenRejected("revoked")
        if record.iat < revoked_before:
            raise TokenRejected("revoked_early")
        return jti

    def revoke(self, jti: str) -> None:
        """Revoke one token (spec §3: logout; it stays revoked)."""
        self._revoked.add(jti)

    def revoke_all(self) -> int:
        """Revoke every token issued so far; returns how many were still live."""
        live = [j for j in self._issued if j not in self._revoked]
        self._revoked.update(live)
        return len(live)
