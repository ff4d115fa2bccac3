"""The root ``asyncwifi`` group: global options, the client factory, and the async runner.

``--simulate`` starts the embedded simulator in this process with a fast clock (a
:class:`~asyncwifi.ScaledClock` shared by the simulator and the client) and a seeded
dataset covering the requested range, and points the command at it: no account needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from asyncwifi._instant import format_instant
from asyncwifi.cli._config import Settings, load_settings, shared_store
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._progress import Display, LogFormat
from asyncwifi.cli._simulate import SimOptions

if TYPE_CHECKING:
    from asyncwifi._client import Client

__all__ = ["App", "SimOptions", "output_options", "pass_app", "run_async"]

T = TypeVar("T")


@dataclass
class App:
    """What every command receives (``ctx.obj``)."""

    config: Path | None = None
    allow_http: bool = False
    #: the month's object allowance (``--allowance``, ASYNCWIFI_ALLOWANCE), checked: objects
    #: per kind (``"all"``: every kind together); empty when none was given
    allowance: Mapping[str, int] = field(default_factory=dict)
    sim: SimOptions = field(default_factory=SimOptions)
    display: Display = field(default_factory=Display)
    _settings: Settings | None = None

    def settings(self) -> Settings:
        """The configuration (file and environment), read once; its warnings shown once."""
        if self._settings is None:
            self._settings = load_settings(self.config)
            for warning in self._settings.warnings:
                self.display.warning("config", warning)
        return self._settings

    def check_credentials(self, *, organization: bool = True) -> None:
        """Fail now (exit 78) when the command could not log in; nothing is sent."""
        if not self.sim.enabled:
            settings = self.settings()
            _key, _secret, base_url = settings.require(organization=organization)
            self._refuse_plain_http(settings, base_url)

    def _refuse_plain_http(self, settings: Settings, base_url: str) -> None:
        """The client's plain-http rule, with the switch a command-line user has (exit 78)."""
        from asyncwifi._client import ALLOW_HTTP_ENV, plain_http_refusal

        refusal = plain_http_refusal(
            base_url,
            self.allow_http or settings.allow_http,
            f"pass --allow-http or set {ALLOW_HTTP_ENV}=1",
        )
        if refusal is not None:
            raise CliFailure(str(refusal), ExitCode.CONFIG)

    @contextlib.asynccontextmanager
    async def client(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        on_exhausted: Literal["wait", "raise"] = "wait",
        max_wait: float | None = None,
        organization: bool = True,
        rate_store: str | None = None,
    ) -> AsyncIterator[Client]:
        """An open client: on the account, or on an embedded simulator with ``--simulate``.
        ``rate_store`` (``redis://...``) shares the key's quota with its other users."""
        if self.sim.enabled:
            from asyncwifi.cli._simulate import simulated_client

            async with simulated_client(
                self.sim,
                self.display,
                since=since,
                until=until,
                on_exhausted=on_exhausted,
                max_wait=max_wait,
                rate_store=rate_store,
                month=self.allowance or None,
            ) as api:
                yield api
            return
        from asyncwifi._client import Client
        from asyncwifi.ratelimit import Limits

        settings = self.settings()
        key, secret, base_url = settings.require(organization=organization)
        self._refuse_plain_http(settings, base_url)
        api = Client(
            key,
            secret,
            base_url=base_url,
            organization=settings.organization,
            allow_http=self.allow_http or settings.allow_http,
            limits=Limits(
                on_exhausted=on_exhausted, max_wait=max_wait, month=self.allowance or None
            ),
            rate_store=shared_store(rate_store, key),
        )
        async with api:
            yield api


pass_app = click.make_pass_decorator(App)


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(App).display.quiet = True


def _set_format(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value:
        fmt: LogFormat = "json" if value == "json" else "text"
        ctx.ensure_object(App).display.log_format = fmt
        _configure_logging(fmt, None)


def output_options(fn: Any) -> Any:
    """``--quiet`` and ``--log-format``, accepted on the root and on long-running commands."""
    fn = click.option(
        "--log-format",
        type=click.Choice(["text", "json"]),
        default=None,
        expose_value=False,
        callback=_set_format,
        help="text (default) or json: one JSON object per line on stderr, for daemons.",
    )(fn)
    return click.option(
        "--quiet",
        "-q",
        is_flag=True,
        default=False,
        expose_value=False,
        callback=_set_quiet,
        help="No progress; only warnings and errors.",
    )(fn)


class _TextFormatter(logging.Formatter):
    """``asyncwifi: warning: ...``: the SDK's log lines spelled like the command's own."""

    def format(self, record: logging.LogRecord) -> str:
        return f"asyncwifi: {record.levelname.lower()}: {record.getMessage()}"


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        import json

        return json.dumps(
            {
                "ts": format_instant(record.created),  # as the command's own JSON lines
                "level": record.levelname.lower(),
                "event": "log",
                "logger": record.name,
                "message": record.getMessage(),
            }
        )


def _configure_logging(fmt: LogFormat, verbose: int | None) -> None:
    """The SDK's own log lines (throttling, retries) on stderr, in the chosen format."""
    root = logging.getLogger("asyncwifi")
    handler = next((h for h in root.handlers if getattr(h, "_asyncwifi_cli", False)), None)
    if handler is None:
        handler = logging.StreamHandler()
        handler._asyncwifi_cli = True  # type: ignore[attr-defined]
        root.addHandler(handler)
        root.propagate = False
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(_TextFormatter())
    if verbose is not None:
        root.setLevel(
            logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
        )


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro``; SIGINT or SIGTERM cancel it (an export's progress is saved) -> exit 130."""

    async def main() -> T:
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()

        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, task.cancel)
        try:
            return await task
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.remove_signal_handler(signum)

    try:
        return asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise CliFailure(
            "interrupted (an export keeps its progress: run the same command again to resume)",
            ExitCode.INTERRUPTED,
        ) from None
