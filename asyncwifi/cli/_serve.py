"""``asyncwifi webhooks serve``: the webhook receiver as a long-running server."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from asyncwifi.cli._app import App, output_options, pass_app
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._files import check_creatable

__all__ = ["webhooks_group"]


def _serve_forever(coro: Any) -> None:
    """Run a server coroutine until SIGINT or SIGTERM; a clean stop exits 0."""

    async def main() -> None:
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
    except OSError as exc:
        raise CliFailure(f"cannot listen: {exc.strerror or exc}", ExitCode.FAILURE) from None


@click.group("webhooks")
def webhooks_group() -> None:
    """Receive the platform's webhooks (spec §6.2)."""


@webhooks_group.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(0, 65_535), default=8080, show_default=True)
@click.option("--path", default="/webhooks", show_default=True, help="URL path to receive on.")
@click.option(
    "--header-name",
    default=None,
    help="Header carrying the shared secret (as configured in the dashboard's webhook headers).",
)
@click.option("--out", default=None, help="Append each event to this JSON Lines file.")
@click.option("--handler", default=None, help="Call package.module:function for each event.")
@click.option("--spool", default=None, help="Durable mode: accept into this SQLite spool first.")
@click.option(
    "--max-age", type=click.FloatRange(min=1), default=None, help="Refuse older events (s)."
)
@output_options
@pass_app
def webhooks_serve(
    app: App,
    host: str,
    port: int,
    path: str,
    header_name: str | None,
    out: str | None,
    handler: str | None,
    spool: str | None,
    max_age: float | None,
) -> None:
    """Receive webhooks; the shared secret comes from $ASYNCWIFI_WEBHOOK_SECRET only.

    There is no flag for the secret: the process list and the shell history would show it.
    Several comma-separated secrets are all accepted (for a rotation).
    """
    from asyncwifi.errors import ConfigurationError
    from asyncwifi.webhooks import JsonlSink, Receiver, serve
    from asyncwifi.webhooks._receiver import DEFAULT_HEADER_NAME
    from asyncwifi.webhooks._sinks import SECRET_ENV_VAR, load_handler, secrets_from_env

    if out is None and handler is None:
        raise click.UsageError("give --out FILE or --handler MODULE:FUNCTION (or both)")
    if out is not None:
        check_creatable(Path(out), "output", regular=False)
    if spool is not None:
        check_creatable(Path(spool), "spool")
    try:
        secrets = secrets_from_env(SECRET_ENV_VAR)
        receiver = Receiver(
            secrets, header_name=header_name or DEFAULT_HEADER_NAME, max_age=max_age
        )
        handlers: list[Callable[..., Any]] = []
        if out is not None:
            handlers.append(JsonlSink(out))
        if handler is not None:
            handlers.append(load_handler(handler))
    except ConfigurationError as exc:
        raise CliFailure(str(exc), ExitCode.CONFIG) from None

    async def each(payload: Any, context: Any) -> None:
        for fn in handlers:
            outcome = fn(payload, context)
            if inspect.isawaitable(outcome):
                await outcome

    receiver.fallback(each)

    def ready(bound: int) -> None:
        app.display.info(
            "listening",
            f"receiving webhooks on http://{host}:{bound}{path} "
            f"(secret from ${SECRET_ENV_VAR}, header {receiver.header_name}); Ctrl-C stops",
            port=bound,
        )

    _serve_forever(serve(receiver, host=host, port=port, path=path, spool=spool, on_ready=ready))
