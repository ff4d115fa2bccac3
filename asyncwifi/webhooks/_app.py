"""The thin aiohttp shell around a :class:`Receiver`: the app, ``serve``, ``run_receiver``.

What a 2xx means (spec §6.2 rule 3: any 2xx acknowledges):

- **memory mode** (no spool): ``200 {"status": "handled"}`` after the handler *returned*.
  A handler that raises or times out gives ``500`` and its nonce is released, so a
  redelivery is processed. Nothing is kept on disk: a crash loses nothing acknowledged,
  because nothing is acknowledged before it is handled; the handler's latency is the
  acknowledgement's.
- **durable mode** (``spool=...``): ``202 {"status": "accepted"}`` after the event is
  committed to the SQLite spool; handlers run afterwards in a worker, with retries. A
  handler's failure never reaches the sender.
- ``200 {"status": "duplicate"}``: the nonce was seen within the de-duplication TTL;
  ``200 {"status": "ignored"}``: no handler (and no fallback) for the event type.

Each delivery answered ``handled``, ``accepted`` or ``ignored`` is counted once as an object
(spec §8) when the receiver has a store (``Receiver(objects=...)``); a duplicate, a
rejection or a failure is not (its redelivery, once accepted, is).

Errors answer ``{"message": ...}``: 400 malformed JSON, 401 secret missing or wrong, 404,
405, 409 too old (``max_age``), 413 too large, 415 not JSON, 422 wrong shape, 500 handler
failure (memory mode), 503 de-duplication store or spool unavailable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from aiohttp import web

from asyncwifi._defaults import WEBHOOKS_PORT
from asyncwifi._retry import RetryPolicy
from asyncwifi.errors import ConfigurationError
from asyncwifi.models import WebhookPayload
from asyncwifi.webhooks._dispatcher import Dispatcher
from asyncwifi.webhooks._receiver import Receiver, Rejection, WebhookContext
from asyncwifi.webhooks._spool import Spool

__all__ = ["DEFAULT_PORT", "create_app", "run_receiver", "serve"]

_log = logging.getLogger("asyncwifi.webhooks")
_JSON: Final = "application/json"


def _reply(status: int, body: bytes, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=body, content_type=_JSON, headers=headers)


def _message(text: str) -> bytes:
    return Rejection(0, text).body()


_HANDLED: Final = b'{"status":"handled"}'
_ACCEPTED: Final = b'{"status":"accepted"}'
_DUPLICATE: Final = b'{"status":"duplicate"}'
_IGNORED: Final = b'{"status":"ignored"}'
_HANDLER_FAILED: Final = _message("the handler failed; the event was not processed")
_INTERNAL: Final = _message("internal error")
_UNREADABLE: Final = _message("could not read the request body")


@dataclass(slots=True)
class _State:
    receiver: Receiver
    spool: Spool | None
    dispatcher: Dispatcher | None


_STATE: Final = web.AppKey("asyncwifi.webhooks", _State)


class _Endpoint:
    """The request handler: the receiver's checks, then dedup, then spool or handler."""

    __slots__ = ("receiver", "state")

    def __init__(self, state: _State) -> None:
        self.state = state
        self.receiver = state.receiver

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.method != "POST":
            return _reply(405, _message("only POST is allowed"), {"Allow": "POST"})
        try:
            return await self._process(request)
        except Exception:
            # Nothing a request does may take the server down (issue 8).
            _log.exception("unexpected error while receiving a webhook")
            return _reply(500, _INTERNAL)

    async def _process(self, request: web.Request) -> web.StreamResponse:
        receiver = self.receiver
        rejection = receiver.check_headers(request.headers)
        if rejection is not None:
            return _reply(rejection.status, rejection.body())
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            too_large = receiver.too_large()
            return _reply(too_large.status, too_large.body())
        except Exception:
            return _reply(400, _UNREADABLE)
        payload = receiver.decode(body)
        if isinstance(payload, Rejection):
            return _reply(payload.status, payload.body())
        now = receiver.clock.now()
        rejection = receiver.check_age(payload, now)
        if rejection is not None:
            return _reply(rejection.status, rejection.body())
        nonce = payload.nonce
        if nonce is not None:
            # first, whatever the type: a redelivery is one delivery, counted once (spec §8)
            try:
                fresh = await receiver.dedup.claim(nonce, now)
            except Exception:
                _log.exception("webhook de-duplication store unavailable")
                return _reply(503, _message("de-duplication store unavailable"))
            if not fresh:
                return _reply(200, _DUPLICATE)
        if receiver.handler_for(payload.type) is None:
            await receiver.count_delivery()  # received and acknowledged: exchanged
            return _reply(200, _IGNORED)
        headers = receiver.redact(request.headers)
        if self.state.spool is not None:
            return await self._spool(payload, body, headers, now)
        context = WebhookContext(body=body, headers=headers, received_at=now)
        try:
            await receiver.dispatch(payload, context)
        except Exception:
            _log.exception("webhook handler failed (type %r, nonce %r)", payload.type, nonce)
            await _release(receiver, nonce)
            return _reply(500, _HANDLER_FAILED)
        await receiver.count_delivery()
        return _reply(200, _HANDLED)

    async def _spool(
        self, payload: WebhookPayload, body: bytes, headers: dict[str, str], now: float
    ) -> web.StreamResponse:
        spool, dispatcher = self.state.spool, self.state.dispatcher
        assert spool is not None
        assert dispatcher is not None
        try:
            spooled = await spool.put(
                nonce=payload.nonce, type=payload.type, body=body, headers=headers, received_at=now
            )
        except Exception:
            _log.exception("webhook spool write failed")
            await _release(self.receiver, payload.nonce)
            return _reply(503, _message("spool unavailable"))
        if spooled is None:  # the nonce was spooled before (e.g. before a restart)
            return _reply(200, _DUPLICATE)
        dispatcher.notify()
        await self.receiver.count_delivery()
        return _reply(202, _ACCEPTED)


async def _release(receiver: Receiver, nonce: str | None) -> None:
    if nonce is None:
        return
    try:
        await receiver.dedup.release(nonce)
    except Exception:
        _log.exception("could not release a webhook nonce")


async def _not_found(request: web.Request) -> web.StreamResponse:
    return _reply(404, _message("not found"))


def create_app(
    receiver: Receiver,
    *,
    path: str = "/webhooks",
    spool: Spool | str | os.PathLike[str] | None = None,
    retry: RetryPolicy | None = None,
    health_path: str | None = "/healthz",
    shutdown_grace: float = 10.0,
) -> web.Application:
    """An aiohttp application that receives webhooks at ``path`` for ``receiver``.

    With ``spool`` (a :class:`Spool` or a file path) the app runs in durable mode: it opens
    the spool and starts the :class:`Dispatcher` on startup (delivering whatever a previous
    run left pending) and stops both on cleanup. ``health_path`` answers ``GET`` with
    ``{"status": "ok", ...}`` for load balancers (in durable mode with the pending and dead
    letter counts, and the handled/retried/dead counts since start).
    ``shutdown_grace`` is how long (real seconds) a running handler may finish at shutdown.
    The receiver's de-duplicator is not closed by the app (see :meth:`Receiver.aclose`).
    """
    if not isinstance(path, str) or not path.startswith("/"):
        raise ConfigurationError(f"the webhook path must start with '/', got {path!r}")
    if spool is not None and not isinstance(spool, Spool):
        spool = Spool(spool)
    dispatcher = (
        Dispatcher(receiver, spool, retry=retry, shutdown_grace=shutdown_grace)
        if spool is not None
        else None
    )
    state = _State(receiver=receiver, spool=spool, dispatcher=dispatcher)
    # The body limit is enforced by aiohttp while reading (413), the declared length earlier.
    app = web.Application(client_max_size=receiver.max_body_size)
    app[_STATE] = state
    app.router.add_route("*", path, _Endpoint(state).handle)
    if health_path is not None:
        app.router.add_get(health_path, _health)
    app.router.add_route("*", "/{tail:.*}", _not_found)
    if spool is not None:
        app.cleanup_ctx.append(_durable_lifecycle)
    return app


async def _durable_lifecycle(app: web.Application) -> Any:
    state = app[_STATE]
    assert state.spool is not None
    assert state.dispatcher is not None
    await state.spool.open()
    state.dispatcher.start()
    try:
        yield
    finally:
        await state.dispatcher.stop()
        await state.spool.close()


async def _health(request: web.Request) -> web.StreamResponse:
    state = request.app[_STATE]
    out: dict[str, Any] = {"status": "ok", "mode": "memory" if state.spool is None else "durable"}
    if state.spool is not None:
        try:
            out["spool"] = await state.spool.counts()
        except Exception:
            return _reply(503, _message("spool unavailable"))
        if state.dispatcher is not None:
            out["since_start"] = state.dispatcher.stats
    return _reply(200, msgspec.json.encode(out))


#: the receiver's port unless told: not the simulator's (8080), so both run side by side
DEFAULT_PORT: Final = WEBHOOKS_PORT


async def serve(
    receiver: Receiver,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    path: str = "/webhooks",
    spool: Spool | str | os.PathLike[str] | None = None,
    retry: RetryPolicy | None = None,
    health_path: str | None = "/healthz",
    access_log: bool = False,
    reuse_port: bool | None = None,
    on_ready: Callable[[int], object] | None = None,
    shutdown_grace: float = 10.0,
) -> None:
    """Serve webhooks until cancelled, then shut down gracefully and close the receiver.

    ``on_ready(port)`` is called once listening (useful with ``port=0``). The access log is
    off by default: it costs throughput and records client addresses. ``shutdown_grace``
    (real seconds) bounds how long in-flight requests and a running handler may finish.
    """
    app = create_app(
        receiver,
        path=path,
        spool=spool,
        retry=retry,
        health_path=health_path,
        shutdown_grace=shutdown_grace,
    )
    runner = web.AppRunner(
        app,
        access_log=logging.getLogger("asyncwifi.webhooks.access") if access_log else None,
        shutdown_timeout=shutdown_grace,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port)
        await site.start()
        bound = port
        for address in runner.addresses:
            if isinstance(address, tuple) and len(address) >= 2:
                bound = int(address[1])
                break
        _log.info("receiving webhooks on http://%s:%d%s", host, bound, path)
        if on_ready is not None:
            on_ready(bound)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await receiver.aclose()


def run_receiver(receiver: Receiver, **options: Any) -> None:
    """Run :func:`serve` in a new event loop until SIGINT or SIGTERM (for the CLI).

    ``options`` are :func:`serve`'s keyword arguments.
    """

    async def main() -> None:
        task = asyncio.create_task(serve(receiver, **options))
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
