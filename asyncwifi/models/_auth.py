"""Authentication bodies (spec §4.1, §5) and the error body (spec §7)."""

from __future__ import annotations

from typing import Any

from asyncwifi.models._base import Model

__all__ = ["ErrorBody", "LoginRequest", "LoginResponse"]


class LoginRequest(Model):
    """Body of ``POST /v1/sts/login/services``.

    Its repr never shows the secret (nor does rich's pretty printer), so a request body
    that ends up in a log or a traceback leaks nothing.
    """

    client_key: str = ""
    client_secret: str = ""

    def __repr__(self) -> str:
        return f"LoginRequest(client_key={self.client_key!r}, client_secret='***')"

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        return [("client_key", self.client_key), ("client_secret", "***")]


class LoginResponse(Model):
    """Login response: ``{token: <JWT>}``. Its repr hides the token too."""

    token: str | None = None

    def __repr__(self) -> str:
        return "LoginResponse(token='***')" if self.token else "LoginResponse(token=None)"

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        return [("token", "***" if self.token else None)]


class ErrorBody(Model):
    """An error response body: ``{message: <text>}`` (spec §7, e.g. ``Access Denied``)."""

    message: str | None = None
