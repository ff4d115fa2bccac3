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

from asyncwifi._defaults import SIMULATOR_PORT
from asyncwifi.cli._app import App, pass_app
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._files import check_creatable
from asyncwifi.cli._options import OUTPUT, Group, global_options, pii_options, pii_policy
from asyncwifi.cli._types import duration_option

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


def _receiver_port() -> int:
    """The receiver's port unless told: ``serve``'s own default (its one owner)."""
    import inspect

    from asyncwifi.webhooks import serve

    return int(inspect.signature(serve).parameters["port"].default)


@click.group("webhooks", cls=Group)
def webhooks_group() -> None:
    """Receive the platform's webhooks (spec §6.2)."""


@webhooks_group.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65_535),
    default=_receiver_port(),
    show_default=True,
    help=f"Port to listen on; 0: any (asyncwifi simulate's is {SIMULATOR_PORT}).",
)
@click.option("--path", default="/webhooks", show_default=True, help="URL path to receive on.")
@click.option(
    "--header-name",
    default=None,
    help="Header carrying the shared secret (as configured in the dashboard's webhook headers).",
)
@click.option("--out", default=None, help="Append each event to this JSON Lines file.")
@click.option("--handler", default=None, help="Call package.module:function for each event.")
@click.option("--spool", default=None, help="Durable mode: accept into this SQLite spool first.")
@duration_option("--max-age", min=1.0, help="Refuse events older than this.")
@pii_options("the spool and --out")
@global_options(OUTPUT)
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
    pii: str | None,
    pii_key_file: str | None,
) -> None:
    """Receive webhooks; the shared secret comes from $ASYNCWIFI_WEBHOOK_SECRET only.

    There is no flag for the secret: the process list and the shell history would show it.
    Several comma-separated secrets are all accepted (for a rotation).
    """
    from asyncwifi.errors import ConfigurationError
    from asyncwifi.webhooks import (
        DEFAULT_HEADER_NAME,
        SECRET_ENV_VAR,
        JsonlSink,
        Receiver,
        Spool,
        load_handler,
        secrets_from_env,
        serve,
    )

    if out is None and handler is None:
        raise click.UsageError("give --out FILE or --handler MODULE:FUNCTION (or both)")
    policy = pii_policy(pii, pii_key_file)  # bad: one line, exit 78, before listening
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
            # durable: the spool scrubbed the event already (not hashed twice)
            handlers.append(JsonlSink(out, pii=None if spool else policy))
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

    spooled = None if spool is None else Spool(spool, pii=policy)
    _serve_forever(serve(receiver, host=host, port=port, path=path, spool=spooled, on_ready=ready))
