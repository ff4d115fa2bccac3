"""Receive the platform's webhooks (spec §6.2): typed, authenticated, de-duplicated, durable.

::

    from asyncwifi.webhooks import Receiver, serve

    receiver = Receiver(secrets_from_env(), header_name="X-Webhook-Secret")

    @receiver.on("signup", "login")
    async def on_guest(payload, context):
        print(payload.contact.email, context.attempt)

    await serve(receiver, port=8080, spool="webhooks.sqlite3")   # durable mode

The checks and the router (:class:`Receiver`) do no I/O; :func:`create_app` is the aiohttp
shell; :class:`Spool` and :class:`Dispatcher` make durable mode.
"""

from asyncwifi.webhooks._app import create_app, run_receiver, serve
from asyncwifi.webhooks._dedup import Deduplicator, MemoryDeduplicator, RedisDeduplicator
from asyncwifi.webhooks._dispatcher import Dispatcher, RetryPolicy
from asyncwifi.webhooks._receiver import (
    DEFAULT_HEADER_NAME,
    Handler,
    Receiver,
    Rejection,
    WebhookContext,
)
from asyncwifi.webhooks._sinks import SECRET_ENV_VAR, JsonlSink, load_handler, secrets_from_env
from asyncwifi.webhooks._spool import DeadLetter, EventOutcome, Spool, SpooledEvent

__all__ = [
    "DEFAULT_HEADER_NAME",
    "SECRET_ENV_VAR",
    "DeadLetter",
    "Deduplicator",
    "Dispatcher",
    "EventOutcome",
    "Handler",
    "JsonlSink",
    "MemoryDeduplicator",
    "Receiver",
    "RedisDeduplicator",
    "Rejection",
    "RetryPolicy",
    "Spool",
    "SpooledEvent",
    "WebhookContext",
    "create_app",
    "load_handler",
    "run_receiver",
    "secrets_from_env",
    "serve",
]
