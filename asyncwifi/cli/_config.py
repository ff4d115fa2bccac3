"""Credentials and settings for the command: environment variables over a TOML file (the
one reading, ``asyncwifi._settings.resolve``: arguments > environment > file > default).

The file is ``--config PATH``, else ``$ASYNCWIFI_CONFIG``, else
``$XDG_CONFIG_HOME/asyncwifi/config.toml`` (``~/.config/asyncwifi/config.toml``)::

    client_key = "..."
    client_secret = "..."
    base_url = "https://api.example.net"
    organization = "org-cid"

Environment variables (``ASYNCWIFI_CLIENT_KEY``, ``ASYNCWIFI_CLIENT_SECRET``,
``ASYNCWIFI_BASE_URL``, ``ASYNCWIFI_ORGANIZATION``, ``ASYNCWIFI_ALLOW_HTTP=1`` for a
plain-http simulator, and ``ASYNCWIFI_TIMEOUT``, a request's seconds: ``timeout = 10`` in
the file) win over the file. There is no
command-line flag for the secret: ``ps`` and shell history would show it. No message ever
repeats a value read from the file or the environment.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from asyncwifi._auth import redact_url
from asyncwifi._client import ALLOW_HTTP_ENV, ENV_VARS, TIMEOUT_ENV, env_flag, timeout_of
from asyncwifi._settings import from_environment, resolve_all
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._words import plural

if TYPE_CHECKING:
    from asyncwifi.ratelimit import RedisStore

__all__ = [
    "RATE_STORE_SCHEMES",
    "Settings",
    "default_config_path",
    "load_settings",
    "rate_store_option",
    "shared_store",
]

F = TypeVar("F", bound=Callable[..., Any])

_BOOLS = {"allow_http": ALLOW_HTTP_ENV}
_NUMBERS = {"timeout": TIMEOUT_ENV}


@dataclass(frozen=True)
class Settings:
    """What the command knows of the account; the secret never shows in a repr."""

    client_key: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    base_url: str | None = None
    organization: str | None = None
    allow_http: bool = False
    #: a request's timeout in seconds (None: the client's default)
    timeout: float | None = None
    #: the configuration file read, if any
    path: Path | None = None
    #: a warning to show (a secret in a file others can read)
    warnings: tuple[str, ...] = ()

    def require(self, *, organization: bool = True) -> tuple[str, str, str]:
        """The key, secret and base URL, or a one-line ``CliFailure`` naming what is missing."""
        wanted = ["client_key", "client_secret", "base_url"] + (
            ["organization"] if organization else []
        )
        missing = [name for name in wanted if not getattr(self, name)]
        if missing:
            env = ", ".join(ENV_VARS[name] for name in missing)
            where = f" or {', '.join(missing)} in {self.path}" if self.path else ""
            raise CliFailure(
                f"missing credentials: set {env}{where} (or use --simulate to try the "
                "embedded simulator)",
                ExitCode.CONFIG,
            )
        return self.client_key or "", self.client_secret or "", self.base_url or ""


def default_config_path(environ: Mapping[str, str]) -> Path:
    """Where the configuration file is looked for when ``--config`` is not given."""
    if environ.get("ASYNCWIFI_CONFIG"):
        return Path(environ["ASYNCWIFI_CONFIG"]).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "asyncwifi" / "config.toml"


def load_settings(
    config: Path | None,
    environ: Mapping[str, str] | None = None,
    *,
    arguments: Mapping[str, object] | None = None,
) -> Settings:
    """Read the configuration file (if any) and the environment under the command's own
    ``arguments`` (``--allow-http``): arguments > environment > file."""
    env = os.environ if environ is None else environ
    explicit = config is not None or bool(env.get("ASYNCWIFI_CONFIG"))
    path = config.expanduser() if config is not None else default_config_path(env)
    values: dict[str, object] = {}  # the file's layer
    warnings: list[str] = []
    used: Path | None = None
    if path.is_file():
        used = path
        try:
            with path.open("rb") as fh:
                data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            # the decoder's message gives a position, never the content
            raise CliFailure(f"cannot read config file {path}: {exc}", ExitCode.CONFIG) from None
        except OSError as exc:
            raise CliFailure(
                f"cannot read config file {path}: {exc.strerror}", ExitCode.CONFIG
            ) from None
        known = set(ENV_VARS) | set(_BOOLS) | set(_NUMBERS)
        unknown = sorted(set(data) - known)
        if unknown:
            raise CliFailure(
                f"config file {path}: unknown {plural(len(unknown), 'key')} {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})",
                ExitCode.CONFIG,
            )
        for key, value in data.items():
            if key in _NUMBERS:
                value = _number(f"config file {path}: {key}", value)
            elif not isinstance(value, expected := bool if key in _BOOLS else str):
                raise CliFailure(
                    f"config file {path}: {key} must be a {expected.__name__}", ExitCode.CONFIG
                )
            values[key] = value
        if "client_secret" in data and os.name == "posix":
            mode = path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                warnings.append(
                    f"config file {path} holds the client secret and others can read it "
                    f"(chmod 600 {path})"
                )
    elif explicit:
        raise CliFailure(f"config file {path} does not exist", ExitCode.CONFIG)
    # the environment's layer, read as the file's values are; then the one reading
    environment: dict[str, object] = dict(from_environment(ENV_VARS, env))
    environment.update({k: env_flag(v) for k, v in from_environment(_BOOLS, env).items()})
    for key, text in from_environment(_NUMBERS, env).items():
        environment[key] = _number(_NUMBERS[key], text)
    names = (*ENV_VARS, *_BOOLS, *_NUMBERS)
    values = resolve_all(names, arguments=arguments, environment=environment, file=values)
    return Settings(
        client_key=_str(values.get("client_key")),
        client_secret=_str(values.get("client_secret")),
        base_url=_str(values.get("base_url")),
        organization=_str(values.get("organization")),
        allow_http=bool(values.get("allow_http", False)),
        timeout=_float(values.get("timeout")),
        path=used,
        warnings=tuple(warnings),
    )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _number(what: str, value: object) -> float:
    """A number of seconds from the file or a variable (``what``), checked by the client's
    rule (exit 78 naming it)."""
    from asyncwifi.errors import ConfigurationError

    try:
        return timeout_of(value.strip() if isinstance(value, str) else repr(value), what)
    except ConfigurationError as exc:
        raise CliFailure(str(exc), ExitCode.CONFIG) from None


#: the URLs ``--rate-store`` takes (a Redis server)
RATE_STORE_SCHEMES = ("redis://", "rediss://", "unix://")


def _rate_store_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not value.startswith(RATE_STORE_SCHEMES):
        # the value is never repeated: it may hold a password
        raise click.BadParameter("a redis://, rediss:// or unix:// URL", ctx, param)
    return value


def rate_store_option(help: str) -> Callable[[F], F]:
    """``--rate-store redis://...`` (or ASYNCWIFI_RATE_STORE): the limiter's store shared by
    every user of the key; checked before anything is sent. ``help`` says what sharing gives
    the command."""
    return click.option(
        "--rate-store",
        envvar="ASYNCWIFI_RATE_STORE",
        metavar="redis://...",
        callback=_rate_store_url,
        help=help,
    )


def shared_store(url: str | None, client_key: str) -> RedisStore | None:
    """The rate limiter's store shared by every user of ``client_key`` at ``url``
    (``redis://...``), or None (this process alone)."""
    if url is None:
        return None
    from asyncwifi.ratelimit import RedisStore

    try:
        return RedisStore.for_key(url, client_key)
    except Exception as exc:
        raise CliFailure(f"--rate-store {redact_url(url)}: {exc}", ExitCode.CONFIG) from None
