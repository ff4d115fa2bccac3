"""A dlt source of the platform: contacts, events, hotspots and segments (``asyncwifi[dlt]``).

``asyncwifi_source(...)`` returns a ``dlt`` source whose four resources share one
:class:`~asyncwifi.Client` for the whole extraction, so the quota rules (60 a minute,
15,000 a day) hold inside a pipeline. dlt runs the resources' async generators on one
event loop of its own; the client is opened when the first selected resource starts and
closed when the last one ends. Records are the server's JSON, whole (dlt normalises nested
objects into columns and lists into child tables); the source adds only ``id`` to event
records that carry it nested (or none) and ``event_time`` (see ``docs/guides/dlt.md``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from typing import Any

import dlt
import msgspec
from dlt.extract.resource import DltResource
from dlt.extract.source import DltSource

from asyncwifi._client import Client, ClientState
from asyncwifi._instant import utc_time
from asyncwifi._protocol import format_datetime
from asyncwifi._resources._contacts import PageSize, page_size
from asyncwifi._resources._events import validate_event_query
from asyncwifi.errors import ConfigurationError
from asyncwifi.models import Contact, Event
from asyncwifi.models._identity import record_id

__all__ = ["SOURCE_NAME", "asyncwifi_source"]

#: the source's name: dlt reads its settings from ``sources.asyncwifi.*``
SOURCE_NAME = "asyncwifi"

#: one record as dlt receives it: the server's JSON, decoded
Row = dict[str, Any]

#: where each setting comes from when not passed: dlt's configuration, then asyncwifi's env
_SETTINGS = (
    ("client_key", "ASYNCWIFI_CLIENT_KEY", True),
    ("client_secret", "ASYNCWIFI_CLIENT_SECRET", True),
    ("base_url", "ASYNCWIFI_BASE_URL", False),
    ("organization", "ASYNCWIFI_ORGANIZATION", False),
)


class _Session:
    """One client for the whole source: opened when the first selected resource starts,
    closed when the last one ends. When one fails, dlt closes the others' generators, so
    the last release still comes; closing at the first failure made the others fail with
    "the client is closed", which dlt could report instead of the real cause."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._owned = client.state is ClientState.UNOPENED
        self._running = 0

    def register(self) -> None:
        """A selected resource is about to run (dlt evaluates them all before the first)."""
        self._running += 1

    async def acquire(self) -> Client:
        # opened on dlt's event loop, where every request of the extraction is made
        if self._client.state is ClientState.UNOPENED:
            self._client.open()
        return self._client

    async def release(self) -> None:
        self._running -= 1
        if self._owned and self._running <= 0:
            self._owned = False
            await self._client.aclose()


def _as_utc(value: datetime | str | None, what: str) -> datetime | None:
    """An aware UTC datetime, or ``ValidationError`` for a naive or malformed value."""
    if value is None:
        return None
    parsed = utc_time(format_datetime(value, what))
    assert parsed is not None
    return parsed


def _resolve(given: dict[str, Any]) -> dict[str, Any]:
    """Client settings: keyword arguments, then dlt's ``sources.asyncwifi.*`` (secrets.toml,
    config.toml, ``SOURCES__ASYNCWIFI__CLIENT_KEY``...), then asyncwifi's environment."""
    settings = dict(given)
    for name, env, secret in _SETTINGS:
        if settings.get(name) is not None:
            continue
        key = f"sources.{SOURCE_NAME}.{name}"
        value: object = dlt.secrets.get(key) if secret else dlt.config.get(key)
        value = value if value is not None else os.environ.get(env) or None
        if value is not None:
            settings[name] = str(value)
    missing = [n for n in ("client_key", "client_secret") if not settings.get(n)]
    if missing:
        raise ConfigurationError(
            "asyncwifi_source needs " + " and ".join(missing) + ": pass them, put them in "
            f".dlt/secrets.toml under [sources.{SOURCE_NAME}], or set "
            + " / ".join(f"SOURCES__ASYNCWIFI__{n.upper()}, ASYNCWIFI_{n.upper()}" for n in missing)
        )
    return settings


def _event_row(item: Event, raw: msgspec.Raw | None) -> dict[str, Any]:
    """The server's record as a dict, plus ``id`` (top level, whichever shape: the record's
    id by the one rule of ``asyncwifi.models._identity``, ``sha256:...`` for a record with
    none) and ``event_time`` (``ev.time``: aware UTC, or None when it carries no UTC time)."""
    assert raw is not None
    row: dict[str, Any] = msgspec.json.decode(raw)
    row["id"] = record_id(item, raw)
    row["event_time"] = item.time
    return row


def _events(
    session: _Session,
    *,
    date_start: datetime | None,
    date_end: datetime | None,
    types: list[str] | None,
    size: int,
) -> DltResource:
    async def rows(
        cursor: dlt.sources.incremental[datetime],
    ) -> AsyncIterator[Row]:
        state = dlt.current.resource_state()
        # the next run starts at the latest of: the range asked for, the newest event time
        # loaded (dlt's incremental state), and the end of the last range fully loaded
        # (the only progress marker for records that carry no UTC time)
        marks = [date_start, cursor.last_value, utc_time(state.get("range_end"))]
        start = max((m for m in marks if m is not None), default=None)
        api = await session.acquire()
        try:
            # "now" on the client's time line (the same clock as its scheduler)
            end = date_end or datetime.fromtimestamp(api.clock.now(), UTC)
            if start is None or start <= end:
                stream = api.events.list(
                    date_start=start, date_end=end, types=types, size=size, keep_raw=True
                )
                async with stream:
                    async for record in stream.records():
                        yield _event_row(record.item, record.raw)
            state["range_end"] = format_datetime(end, "date_end")
        finally:
            await session.release()

    # dlt's incremental state on ``event_time``; records without one are always kept
    by_time = dlt.sources.incremental[datetime](
        "event_time", initial_value=date_start, on_cursor_value_missing="include"
    )

    def events(cursor: dlt.sources.incremental[datetime] = by_time) -> AsyncIterator[Row]:
        session.register()
        return rows(cursor)

    return dlt.resource(events, name="events", primary_key="id", write_disposition="merge")


def _contacts(session: _Session, *, size: PageSize) -> DltResource:
    async def rows(cursor: dlt.sources.incremental[str]) -> AsyncIterator[Row]:
        since = utc_time(cursor.last_value)
        api = await session.acquire()
        try:
            # newest modification first: once a page reaches what was loaded, stop paying
            stream = api.contacts.list(
                sort_by="modified", sort_reverse=True, size=size, keep_raw=True
            )
            async with stream:
                async for record in stream.records():
                    contact: Contact = record.item
                    modified = utc_time(contact.modified)
                    if since is not None and modified is not None and modified < since:
                        break
                    assert record.raw is not None
                    yield msgspec.json.decode(record.raw)
        finally:
            await session.release()

    by_modified = dlt.sources.incremental[str]("modified", on_cursor_value_missing="include")

    def contacts(cursor: dlt.sources.incremental[str] = by_modified) -> AsyncIterator[Row]:
        session.register()
        return rows(cursor)

    return dlt.resource(contacts, name="contacts", primary_key="cid", write_disposition="merge")


def _listing(session: _Session, name: str) -> DltResource:
    """Hotspots or segments: a whole list per run, merged on ``id``."""

    async def rows() -> AsyncIterator[list[Row]]:
        api = await session.acquire()
        try:
            items: list[Any] = (
                await api.hotspots.list() if name == "hotspots" else await api.segments.list()
            )
            # these lists have no keep_raw: the typed records back in the server's names
            yield [msgspec.to_builtins(item) for item in items]
        finally:
            await session.release()

    def listing() -> AsyncIterator[list[Row]]:
        session.register()
        return rows()

    return dlt.resource(listing, name=name, primary_key="id", write_disposition="merge")


def asyncwifi_source(
    client: Client | None = None,
    *,
    date_start: datetime | str | None = None,
    date_end: datetime | str | None = None,
    event_types: Iterable[str] | None = None,
    events_page_size: int = 10_000,
    contacts_page_size: PageSize = "max",
    **options: Any,
) -> DltSource:
    """The dlt source: resources ``contacts``, ``events``, ``hotspots``, ``segments``.

    Pass a :class:`~asyncwifi.Client` (unopened: the source opens and closes it) or the
    keyword options ``Client`` takes (``client_key``, ``client_secret``, ``base_url``,
    ``limits``...); missing credentials come from dlt's ``sources.asyncwifi.*`` settings,
    then ``ASYNCWIFI_*`` variables. ``date_start``/``date_end`` bound the events of the
    first run; later runs continue from where the previous one ended. Call it once per run.
    ``contacts_page_size``: ``"max"`` (the largest page the server accepts, learnt) or a
    number, as ``contacts.list(size=...)``.
    """
    query = validate_event_query(
        date_start=date_start,
        date_end=date_end,
        types=event_types,
        size=events_page_size,
        sort_by="utcTime",
    )
    contacts_size = page_size(contacts_page_size, "contacts_page_size")
    if client is not None and not isinstance(client, Client):
        raise ConfigurationError(f"client must be an asyncwifi.Client, got {type(client)!r}")
    if client is None:
        # built now, so that bad options fail here; it opens on dlt's loop
        settings = _resolve(options)
        client = Client(settings.pop("client_key"), settings.pop("client_secret"), **settings)
    elif options:
        raise ConfigurationError(
            "pass either a Client or client options, not both: got " + ", ".join(sorted(options))
        )
    session = _Session(client)
    types = None if query["events"] is None else str(query["events"]).split(",")
    resources = [
        _contacts(session, size=contacts_size),
        _events(
            session,
            date_start=_as_utc(date_start, "date_start"),
            date_end=_as_utc(date_end, "date_end"),
            types=types,
            size=events_page_size,
        ),
        _listing(session, "hotspots"),
        _listing(session, "segments"),
    ]

    @dlt.source(name=SOURCE_NAME)
    def asyncwifi() -> list[DltResource]:
        return resources

    source: DltSource = asyncwifi()
    return source
