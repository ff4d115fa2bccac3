"""Receive the platform's webhooks (spec §6.2): typed, authenticated, de-duplicated, durable.

::

    from asyncwifi.webhooks import Receiver, serve

    receiver = Receiver(secrets_from_env(), header_name="X-Webhook-Secret")

    @receiver.on("signup", "login")
    async def on_guest(payload, context):
        print(payload.contact.email, context.attempt)

    await serve(receiver, spool="webhooks.sqlite3")   # durable mode, on port 8090

The checks and the router (:class:`Receiver`) do no I/O; :func:`create_app` is the aiohttp
shell; :class:`Spool` and :class:`Dispatcher` make durable mode.

The door also passes, outside ``__all__`` (the public surface is at its 100 names), what
the ``asyncwifi webhooks serve`` command builds with: ``DEFAULT_HEADER_NAME``,
``SECRET_ENV_VAR`` and ``load_handler`` (a ``module:function`` handler).
"""

from asyncwifi.webhooks._app import create_app, serve
from asyncwifi.webhooks._dedup import Deduplicator, MemoryDeduplicator, RedisDeduplicator
from asyncwifi.webhooks._dispatcher import Dispatcher
from asyncwifi.webhooks._receiver import DEFAULT_HEADER_NAME as DEFAULT_HEADER_NAME
from asyncwifi.webhooks._receiver import Receiver, Rejection, WebhookContext
from asyncwifi.webhooks._sinks import SECRET_ENV_VAR as SECRET_ENV_VAR
from asyncwifi.webhooks._sinks import JsonlSink, secrets_from_env
from asyncwifi.webhooks._sinks import load_handler as load_handler
from asyncwifi.webhooks._spool import Spool

__all__ = [
    "Deduplicator",
    "Dispatcher",
    "JsonlSink",
    "MemoryDeduplicator",
    "Receiver",
    "RedisDeduplicator",
    "Rejection",
    "Spool",
    "WebhookContext",
    "create_app",
    "secrets_from_env",
    "serve",
]
