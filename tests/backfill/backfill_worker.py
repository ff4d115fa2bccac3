"""A backfill in its own process, for kill -9 tests: ``python -m tests.backfill.backfill_worker
BASE_URL KEY SECRET ORG OUT SINCE UNTIL``. Prints ``page`` on stdout after each commit."""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime, timedelta
from pathlib import Path

from asyncwifi import Client, Limits
from asyncwifi.backfill import Progress, Reporter, events_backfill


class Pages(Reporter):
    def page(self, progress: Progress, *, slice_index: int, records: int) -> None:
        print("page", flush=True)


async def main(
    base_url: str, key: str, secret: str, org: str, out: str, since: str, until: str
) -> int:
    limits = Limits(minute=None, day=None)
    async with Client(
        key, secret, base_url=base_url, organization=org, allow_http=True, limits=limits
    ) as api:
        job = events_backfill(
            api,
            since=datetime.fromisoformat(since),
            until=datetime.fromisoformat(until),
            out=Path(out),
            state=Path(out + ".state"),
            slice_size=timedelta(hours=12),
            page_size=500,
            concurrency=2,
            reporter=Pages(),
        )
        outcome = await job.run()
        print(outcome.status, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:8])))
