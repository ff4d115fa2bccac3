"""The client's environment: the variables ``Client.from_env()``, the command's
configuration and the dlt source read (one table), and how their text is read."""

from __future__ import annotations

from asyncwifi._protocol import require_positive
from asyncwifi.errors import ConfigurationError

__all__ = [
    "ALLOWANCE_ENV",
    "ALLOW_HTTP_ENV",
    "ENV_VARS",
    "TIMEOUT_ENV",
    "env_flag",
    "plain_http_refusal",
    "timeout_of",
]

#: the one switch that lets a client (``Client.from_env()``, the CLI) use a plain-http URL
ALLOW_HTTP_ENV = "ASYNCWIFI_ALLOW_HTTP"
#: the month's object allowance (spec §8) as ``Limits(month=...)`` takes it: ``20000``,
#: ``"10 access points"``, ``"2000 contacts"`` (``Client.from_env()``, the CLI's ``--allowance``)
ALLOWANCE_ENV = "ASYNCWIFI_ALLOWANCE"
#: seconds a request may take to its last byte (``Client(timeout=...)``; a base URL that
#: never answers fails after two of them): ``Client.from_env()`` and the command read it
TIMEOUT_ENV = "ASYNCWIFI_TIMEOUT"
#: each setting's environment variable: the one table (``from_env``, the command's
#: configuration, the dlt source)
ENV_VARS: dict[str, str] = {
    "client_key": "ASYNCWIFI_CLIENT_KEY",
    "client_secret": "ASYNCWIFI_CLIENT_SECRET",
    "base_url": "ASYNCWIFI_BASE_URL",
    "organization": "ASYNCWIFI_ORGANIZATION",
}


def env_flag(value: str | None) -> bool:
    """An on/off environment variable: 1, true, yes, on (any case) mean on."""
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def timeout_of(text: str, what: str) -> float:
    """A request timeout written as text (``ASYNCWIFI_TIMEOUT``), in seconds, checked as the
    client checks ``timeout``: ``ConfigurationError`` naming ``what``."""
    try:
        value = float(text)
    except ValueError:
        raise ConfigurationError(f"{what} must be a number of seconds, got {text!r}") from None
    return require_positive(value, what, error=ConfigurationError)


def plain_http_refusal(
    base_url: str, allow_http: bool, switch: str = "pass allow_http=True"
) -> ConfigurationError | None:
    """The error for a plain-http ``base_url`` without the switch, phrased for the caller's
    interface (``switch`` says how to turn it on there); None when the URL is acceptable."""
    scheme = base_url.split(":", 1)[0].lower()
    if scheme not in ("https", "http"):
        return ConfigurationError(f"base_url must be an http(s) URL, got scheme {scheme!r}")
    if scheme == "http" and not allow_http:
        return ConfigurationError(
            "plain http sends the client secret and tokens in clear: use https, "
            f"or, for a local simulator, {switch}"
        )
    return None
