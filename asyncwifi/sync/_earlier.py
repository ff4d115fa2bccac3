"""``sync --since`` earlier than where the database's events start: the gap is read, once.

The events feed goes on from its checkpoint; ``since`` says where a *first* run starts, and
that start is recorded (the checkpoint :data:`START`). A later run asked for an earlier
``since`` (an operator who wants more history) used to be ignored without a word: now
:func:`read_earlier` reads the events of ``[since, start)`` with the engine's event feed
into the same database, under a checkpoint of the gap's own (a gap cut short by a stop, a
crash or the day's quota resumes from it), then records ``since`` as the new start. Each
event once: the gap ends where the database's events begin (that instant excluded), and a
row written twice changes nothing. A ``since`` later than the start reads nothing (nothing
stored is deleted), and says so; so does one given to a database whose start was not
recorded (written by an earlier release).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from asyncwifi._instant import MS, format_instant, read_instant
from asyncwifi.engine import EVENTS, EventFeed, Stopped
from asyncwifi.sync._runner import Syncer

__all__ = ["START", "read_earlier"]

#: the checkpoint holding where the database's events start (ISO 8601 UTC)
START = "events.start"


async def read_earlier(
    syncer: Syncer, asked: datetime | None, say: Callable[[str, bool], None]
) -> int:
    """Before the sync's passes: record a first run's start, or read the events from
    ``asked`` (the operator's ``since``) up to the recorded start (module docstring).
    ``say(line, warning)`` tells what it does; returns the rows written. A first run's
    start is fixed in ``syncer.options.since``: its feed starts exactly where recorded."""
    now = datetime.fromtimestamp(syncer.api.clock.now(), UTC)
    start = syncer.options.since = syncer.options.first_start(now)
    stored = await syncer.checkpoint(START)
    if await syncer.checkpoint(EVENTS) is None:  # a first run: its events start here
        if stored != format_instant(start):
            await syncer.save({START: format_instant(start)})
        return 0
    if asked is None:
        return 0
    if stored is None:
        say(
            f"--since {format_instant(asked)} is not applied: this database's events go on "
            "from their checkpoint, and where they start was not recorded (an earlier "
            "release wrote it); read earlier events into a new database, or with "
            "'asyncwifi events backfill'",
            True,
        )
        return 0
    begins = read_instant(stored)
    if asked >= begins:
        if asked > begins:
            say(
                f"--since {format_instant(asked)} is after this database's events start "
                f"({stored}): nothing is deleted; they go on from their checkpoint",
                True,
            )
        return 0
    name = f"events.earlier:{format_instant(asked)}"
    say(f"reading the events from {format_instant(asked)} to {stored} first (--since is "
        "earlier than this database's events)", False)  # fmt: skip
    feed = EventFeed(
        syncer.api,
        checkpoint=await syncer.checkpoint(name),
        since=asked,
        until=begins - MS,  # the feed's end is inclusive; the database has ``begins`` on
        settle=None,  # a range of the past, read whole
        lookback=0.0,  # before the database's start: the daemon's own lookback is at the present
        page_size=syncer.options.page_size,
        span=begins - asked,  # one scroll, while records carry a time
        budget=syncer.budget,
    )
    try:
        written = await syncer.copy(feed.__aiter__(), name)
        if not syncer.stopping:  # the whole gap is in: the events start there now
            await syncer.save({START: format_instant(asked)})
    except Stopped:  # a stop in a wait: what was written stays, the gap resumes next time
        await syncer.drain()
        return 0
    return written
