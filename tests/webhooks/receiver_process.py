"""A durable receiver in its own OS process, for the crash test (run by path, not collected).

The handler records every delivery in a SQLite file (``deliveries``) and applies the
idempotency recipe of :class:`asyncwifi.webhooks.WebhookContext`: only when
``context.attempt > 1`` does it look for an earlier record before recording ``handled``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
from pathlib import Path

from asyncwifi.models._webhook import WebhookPayload
from asyncwifi.webhooks import Receiver, WebhookContext
from asyncwifi.webhooks._app import run_receiver


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--header", default="X-Webhook-Secret")
    args = parser.parse_args()

    out = sqlite3.connect(args.out, isolation_level=None)
    out.execute("PRAGMA journal_mode=WAL")
    out.execute("CREATE TABLE IF NOT EXISTS handled (nonce TEXT, attempt INTEGER, pid INTEGER)")
    out.execute("CREATE TABLE IF NOT EXISTS deliveries (nonce TEXT, attempt INTEGER, pid INTEGER)")
    pid = os.getpid()

    # The secret comes from the environment, as with the CLI.
    receiver = Receiver(os.environ["ASYNCWIFI_WEBHOOK_SECRET"].split(","), header_name=args.header)

    @receiver.fallback
    async def record(payload: WebhookPayload, context: WebhookContext) -> None:
        nonce = payload.nonce
        out.execute("INSERT INTO deliveries VALUES (?, ?, ?)", (nonce, context.attempt, pid))
        seen = (
            context.attempt > 1
            and out.execute("SELECT 1 FROM handled WHERE nonce = ?", (nonce,)).fetchone()
        )
        if not seen:
            out.execute("INSERT INTO handled VALUES (?, ?, ?)", (nonce, context.attempt, pid))
        await asyncio.sleep(args.delay)

    def ready(port: int) -> None:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(port))
        tmp.rename(args.port_file)

    try:
        run_receiver(receiver, port=0, spool=args.spool, on_ready=ready, shutdown_grace=2.0)
    finally:
        out.close()


if __name__ == "__main__":
    main()
