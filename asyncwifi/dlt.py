"""A dlt source of the platform: contacts, events, hotspots and segments (``asyncwifi[dlt]``).

The source runs on the package's one exactly-once engine, as the sync and the backfill do:
events come from an :class:`~asyncwifi.engine.EventFeed` (whose lookback re-reads the
recent past for late events), contacts from the contact feed's changes, hotspots and
segments from snapshots (and the hotspots deleted upstream from their tombstones:
``asyncwifi._dlt_deletes``). A feed's checkpoint lives in its dlt resource state, which dlt
commits with the load: the next run resumes where the last committed one ended, and a record
read again (the lookback) is a no-op under the ``merge`` on its primary key. The resources
share one :class:`~asyncwifi.Client`, so the quota rules (60 a minute, 15,000 a day) hold
inside a pipeline. Records are the server's JSON, whole, named by the one rule of
``asyncwifi.models._identity``, those that do not decode too (see ``docs/guides/dlt.md``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from functools import partial
from typing import Any, ClassVar, NamedTuple, cast

import dlt
import msgspec
import msgspec.inspect as mi
from dlt.common.data_types import TDataType
from dlt.common.schema.typing import TColumnSchema
from dlt.extract.items_transform import MapItem
from dlt.extract.resource import DltResource
from dlt.extract.source import DltSource

from asyncwifi._client import (
    ALLOW_HTTP_ENV,
    ENV_VARS,
    Client,
    ClientState,
    env_flag,
    plain_http_refusal,
)
from asyncwifi._defaults import EVENTS_PAGE_SIZE
from asyncwifi._dlt_deletes import Deletes, deleted_column, deletes_mode, hotspots, mark
from asyncwifi._instant import utc_time
from asyncwifi._protocol import format_datetime
from asyncwifi._resources import PageSize, page_size, validate_event_query
from asyncwifi._settings import from_environment, is_set, resolve
from asyncwifi.engine import (
    DEFAULT_LOOKBACK,
    Batch,
    ContactFeed,
    EventFeed,
    PiiPolicy,
    lookback_of,
    snapshot,
)
from asyncwifi.errors import ClientStateError, ConfigurationError, TransportError, ValidationError
from asyncwifi.models import Contact, Event, RawBytes, record_ids, undecoded

__all__ = ["asyncwifi_source"]

log = logging.getLogger("asyncwifi.dlt")

#: the source's name: dlt reads its settings from ``sources.asyncwifi.*``
SOURCE_NAME = "asyncwifi"

#: one record as dlt receives it: the server's JSON, decoded
Row = dict[str, Any]

#: the key of a feed's checkpoint in its resource's state
CHECKPOINT = "checkpoint"

#: the settings dlt reads from its secrets (the others from its config); see ``_resolve``
_SECRETS = ("client_key", "client_secret")

#: dlt's column type of each scalar a model field may hold
_COLUMN_TYPES: dict[type[mi.Type], TDataType] = {
    mi.StrType: "text",
    mi.IntType: "bigint",
    mi.FloatType: "double",
    mi.BoolType: "bool",
}


class _Session:
    """One client for the whole source: opened when the first selected resource starts,
    closed when the last one ends, or at once when one fails (dlt may leave the others'
    generators unfinished, or close one that never started without its ``finally``: the
    client stayed open). A resource that then meets the closed client (or a request the
    close cut) ends quietly: the failure that closed it is the run's, the one dlt reports."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._owned = client.state is ClientState.UNOPENED
        self._running = 0  # registered and not ended
        #: a resource failed: the client is closed, the others' errors of it are not news
        self.failed = False

    def register(self) -> None:
        """A selected resource is about to run (dlt evaluates them all before the first)."""
        self._running += 1

    async def acquire(self) -> Client:
        # opened on dlt's event loop, where every request of the extraction is made
        if self._client.state is ClientState.UNOPENED:
            self._client.open()
        return self._client

    async def release(self, *, failed: bool = False) -> None:
        self._running -= 1
        self.failed = self.failed or failed
        if self._owned and (self._running <= 0 or failed):
            self._owned = False
            await self._client.aclose()


def _as_utc(value: datetime | str | None, what: str) -> datetime | None:
    """An aware UTC datetime, or ``ValidationError`` for a naive or malformed value."""
    return None if value is None else utc_time(format_datetime(value, what))


def _resolve(given: dict[str, Any]) -> dict[str, Any]:
    """Client settings, read as every entry reads them (``asyncwifi._settings``): keyword
    arguments, then asyncwifi's environment (``ASYNCWIFI_*``; ``ASYNCWIFI_ALLOW_HTTP`` read
    as ``Client.from_env()`` reads it), then dlt's ``sources.asyncwifi.*`` (secrets.toml,
    config.toml, ``SOURCES__ASYNCWIFI__CLIENT_KEY``...), dlt's file."""
    settings = dict(given)
    environment = from_environment(ENV_VARS)
    for name in ENV_VARS:
        file: dict[str, object] = {}
        if not (is_set(settings.get(name)) or name in environment):  # dlt's, when needed
            key = f"sources.{SOURCE_NAME}.{name}"
            file[name] = dlt.secrets.get(key) if name in _SECRETS else dlt.config.get(key)
        value = resolve(name, arguments=settings, environment=environment, file=file)
        if value is not None and not is_set(settings.get(name)):
            settings[name] = str(value)
    missing = [n for n in ("client_key", "client_secret") if not settings.get(n)]
    if missing:
        raise ConfigurationError(
            "asyncwifi_source needs " + " and ".join(missing) + ": pass them, put them in "
            f".dlt/secrets.toml under [sources.{SOURCE_NAME}], or set "
            + " / ".join(f"SOURCES__ASYNCWIFI__{n.upper()}, {ENV_VARS[n]}" for n in missing)
        )
    settings.setdefault("allow_http", env_flag(os.environ.get(ALLOW_HTTP_ENV)))
    if isinstance(url := settings.get("base_url"), str):
        switch = f"set {ALLOW_HTTP_ENV}=1 or pass allow_http=True"
        if (refusal := plain_http_refusal(url, bool(settings["allow_http"]), switch)) is not None:
            raise refusal
    return settings


def _columns(model: type[msgspec.Struct], prefix: str = "") -> dict[str, TColumnSchema]:
    """dlt column hints from a model: each field of one scalar type, nested objects as dlt
    flattens them (``metrics__avgVisitLength``: dlt normalises the names). So a column null
    in every record still gets its type; lists (child tables) and mixed types are dlt's."""
    info = mi.type_info(model)
    assert isinstance(info, mi.StructType)
    columns: dict[str, TColumnSchema] = {}
    for field in info.fields:
        kinds = field.type.types if isinstance(field.type, mi.UnionType) else (field.type,)
        kind, *more = [k for k in kinds if not isinstance(k, mi.NoneType)]
        name = prefix + field.encode_name
        if more:
            continue
        if isinstance(kind, mi.StructType):
            columns.update(_columns(kind.cls, name + "__"))
        elif (data_type := _COLUMN_TYPES.get(type(kind))) is not None:
            columns[name] = {"data_type": data_type}
    return columns


def _row(raw: RawBytes, key: str, ident: str) -> Row:
    """The server's record as a dict, whole, with its id under ``key`` (a JSON value that
    is not an object is kept under ``value``)."""
    data = msgspec.json.decode(raw)
    row: Row = data if isinstance(data, dict) else {"value": data}
    row[key] = ident
    return row


def _rows(batch: Batch[Any], key: str) -> list[Row]:
    """A batch's records, then those the feed set aside (that do not decode, or have no
    id), each under its id by the one rule: the id the sync and the backfill give it."""
    raws = cast("list[RawBytes]", batch.raws)  # the feeds keep the bytes
    ids = batch.ids if batch.ids is not None else record_ids(batch.items, raws)
    rows = [_row(raw, key, ident) for raw, ident in zip(raws, ids, strict=True)]
    for bad in batch.bad:
        log.warning("dlt: a %s record loaded whole as %s: %s", batch.resource, bad.id, bad.error)
        rows.append(_row(bad.raw, key, bad.id))
    return rows


def _event_rows(batch: Batch[Event], key: str) -> list[Row]:
    """:func:`_rows` with ``event_time`` (``Event.time``; read from the bytes for a record
    that does not decode, as the sync does)."""
    times = batch.times if batch.times is not None else [e.time for e in batch.items]
    times = [*times, *(undecoded(bad.raw, Event).time for bad in batch.bad)]
    rows = _rows(batch, key)
    for row, when in zip(rows, times, strict=True):
        row["event_time"] = when
    return rows


def _one_resource(
    session: _Session,
    name: str,
    key: str,
    batches: Callable[[Client, dict[str, Any]], AsyncIterator[Batch[Any]]],
    *,
    rows: Callable[[Batch[Any], str], list[Row]] = _rows,
    columns: dict[str, TColumnSchema] | None = None,
    scrub: Callable[[Row], Row] | None = None,
) -> DltResource:
    """A resource of a feed (``batches(client, state)``), merged on ``key``: each batch's
    rows with its checkpoint, which the resource's last step (:class:`_Commit`) puts in the
    resource's state as it passes the rows on: dlt commits the state with the rows. So a
    run cut short keeps what it yielded, a failed one nothing, and a batch dlt dropped
    (one an async resource made after ``add_limit`` was reached) moves no checkpoint."""
    holder: dict[str, dict[str, Any]] = {}

    async def extract() -> AsyncIterator[_Checkpointed]:
        state = holder["state"] = dlt.current.resource_state()
        failed = False
        try:
            async for batch in batches(await session.acquire(), state):
                found = rows(batch, key)
                yield _Checkpointed(
                    found if scrub is None else [scrub(r) for r in found], batch.checkpoint
                )
        except (ClientStateError, TransportError):
            if not session.failed:
                failed = True
                raise
            # another resource failed and closed the client: its failure is the run's
        except Exception:
            failed = True
            raise
        finally:
            await session.release(failed=failed)

    def resource() -> AsyncIterator[_Checkpointed]:
        session.register()
        return extract()

    def commit(item: _Checkpointed) -> list[Row] | None:
        if item.checkpoint is not None:
            holder["state"][CHECKPOINT] = item.checkpoint
        return item.rows or None

    hints = columns or {}
    made = dlt.resource(
        resource, name=name, primary_key=key, write_disposition="merge", columns=hints
    )
    made.add_step(_Commit(commit))
    return made


class _Checkpointed(NamedTuple):
    """A batch's rows and its checkpoint, on their way to :class:`_Commit`."""

    rows: list[Row]
    checkpoint: str | None


class _Commit(MapItem):
    """The step that moves a resource's checkpoint: placed after dlt's own (its
    ``add_limit`` step, placed at 1.1, drops the items an async resource makes past the
    limit), so only a batch dlt keeps moves it."""

    placement_affinity: ClassVar[float] = 1.5


def _events(
    api: Client,
    state: dict[str, Any],
    *,
    since: datetime | None,
    until: datetime | None,
    types: frozenset[str] | None,
    size: int,
    lookback: float,
) -> AsyncIterator[Batch[Event]]:
    """The event feed, from the resource's checkpoint (else ``since``) to ``until`` or the
    present (the feed ends a run there)."""
    # a pipeline of the source before the feeds kept the end of its last range
    start = max(filter(None, (since, utc_time(state.get("range_end")))), default=None)
    if state.get(CHECKPOINT) is None and start is None:
        raise ValidationError(
            "the first run of the events resource needs date_start: where their "
            "history starts (every day read costs requests); later runs resume"
        )
    feed = EventFeed(
        api,
        checkpoint=state.get(CHECKPOINT),
        since=start,
        until=until,
        settle=0.0,  # a run ends at the present: what is written late comes with the lookback
        page_size=size,
        lookback=lookback,
        list_options={"types": sorted(types) if types else None},
    )
    return aiter(feed)


def _contacts(api: Client, state: dict[str, Any], *, size: PageSize) -> AsyncIterator[Batch[Any]]:
    """The contacts modified since the resource's checkpoint: all of them on the first run."""
    return ContactFeed(api, checkpoint=state.get(CHECKPOINT), page_size=size).changes()


async def _segments(api: Client, state: object) -> AsyncIterator[Batch[Any]]:
    """The segments: the list, whole, each run (no checkpoint)."""
    yield await snapshot(api, "segments")


def _hotspot_rows(batch: Batch[Any], key: str) -> list[Row]:
    """:func:`_rows` with ``deleted``: true on the tombstones, false on the live list."""
    return mark(batch, _rows(batch, key))


def asyncwifi_source(
    client: Client | None = None,
    *,
    date_start: datetime | str | None = None,
    date_end: datetime | str | None = None,
    event_types: Iterable[str] | None = None,
    events_page_size: int = EVENTS_PAGE_SIZE,
    contacts_page_size: PageSize = "max",
    lookback: float = DEFAULT_LOOKBACK,
    resources: Iterable[str] | None = None,
    pii: PiiPolicy | str | None = None,
    deletes: Deletes = "soft",
    **options: Any,
) -> DltSource:
    """The dlt source: resources ``contacts``, ``events``, ``hotspots``, ``segments``.

    Pass a :class:`~asyncwifi.Client` (unopened: the source opens and closes it) or the
    keyword options ``Client`` takes (``client_key``, ``client_secret``, ``base_url``,
    ``limits``...); missing ones come from dlt's ``sources.asyncwifi.*`` settings, then
    ``ASYNCWIFI_*`` variables. ``date_start`` is where the events' first run starts (it
    needs one); later runs resume from their checkpoint. ``date_end`` (inclusive) stops a
    run there, else at the present. ``lookback`` (seconds, 0: off; the sync's default) is
    how late an event may appear and still be loaded by the next run. Call it once per run.
    ``contacts_page_size``: ``"max"`` (the largest page the server accepts, learnt) or a
    number, as ``contacts.list(size=...)``. ``resources``: the ones kept (the sync's
    ``--resources`` rule; None: all four): the others are not in the source at all.
    ``pii``: the sync's PII policy (a :class:`~asyncwifi.engine.PiiPolicy`, or its text
    ``"email=hash,name=drop"`` with the key from ``ASYNCWIFI_PII_KEY``) on every row.
    ``deletes``: what a hotspot deleted upstream becomes in the destination: ``"soft"``
    (the default, the sync's: its row stays, ``deleted`` true) or ``"hard"`` (dlt's
    ``hard_delete`` hint: the merge deletes its row).
    """
    query = validate_event_query(
        date_start=date_start,
        date_end=date_end,
        types=event_types,
        size=events_page_size,
        sort_by="utcTime",
    )
    contacts_size = page_size(contacts_page_size, "contacts_page_size")
    deleted = deleted_column(deletes_mode(deletes))
    from asyncwifi.sync import SyncOptions  # the sync's one rule of a selection

    kept = SyncOptions(resources=None if resources is None else list(resources)).resources
    policy = PiiPolicy.parse(pii) if isinstance(pii, str) else pii
    _resource = partial(_one_resource, scrub=policy.record if policy else None)
    lookback = lookback_of(lookback)
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
    since, until = _as_utc(date_start, "date_start"), _as_utc(date_end, "date_end")
    types = None if query["events"] is None else frozenset(str(query["events"]).split(","))

    events = partial(
        _events, since=since, until=until, types=types, size=events_page_size, lookback=lookback
    )
    every = [
        _resource(
            session, "contacts", "cid", partial(_contacts, size=contacts_size),
            columns=_columns(Contact),
        ),
        _resource(
            session, "events", "id", events,
            rows=_event_rows,
            columns={"event_time": {"data_type": "timestamp"}},  # null on the flat shape
        ),
        _resource(session, "hotspots", "id", hotspots, rows=_hotspot_rows, columns=deleted),
        _resource(session, "segments", "id", _segments),
    ]  # fmt: skip
    chosen = [r for r in every if r.name in (kept or ())]

    @dlt.source(name=SOURCE_NAME)
    def asyncwifi() -> list[DltResource]:
        return chosen

    source: DltSource = asyncwifi()
    return source
