"""What every command receives (:class:`App`, filled by the global options of
``asyncwifi.cli._options``): the client factory, the SDK's log lines and the async runner.

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

__all__ = ["App", "SimOptions", "pass_app", "run_async"]

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
    #: ``-v``: 0 warnings, 1 info, 2 debug (the SDK's log lines)
    verbose: int = 0
    _settings: Settings | None = None

    def settings(self) -> Settings:
        """The configuration (file and environment), read once; its warnings shown once."""
        if self._settings is None:
            # --allow-http: an argument, over the environment and the file (off: unset)
            given = {"allow_http": True} if self.allow_http else None
            self._settings = load_settings(self.config, arguments=given)
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
            settings.allow_http,
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
        # the client's own default timeout unless the configuration gives one
        options: dict[str, Any] = {} if settings.timeout is None else {"timeout": settings.timeout}
        api = Client(
            key,
            secret,
            base_url=base_url,
            organization=settings.organization,
            allow_http=settings.allow_http,
            limits=Limits(
                on_exhausted=on_exhausted, max_wait=max_wait, month=self.allowance or None
            ),
            rate_store=shared_store(rate_store, key),
            **options,
        )
        async with api:
            yield api


pass_app = click.make_pass_decorator(App)


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
        # what a stop does outside the loop (the command's: asyncwifi.cli), put back after
        # it: asyncio's removal would leave SIGTERM to kill the process without a word
        before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
        for signum in before:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, task.cancel)
        try:
            return await task
        finally:
            for signum, handler in before.items():
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    if loop.remove_signal_handler(signum) and handler is not None:
                        signal.signal(signum, handler)

    try:
        return asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise CliFailure(
            "interrupted (an export keeps its progress: run the same command again to resume)",
            ExitCode.INTERRUPTED,
        ) from None
