"""``asyncwifi hotspots ...``, ``segments list`` and ``quota``: one request each
(``quota``: requests per window, and the objects of the month and day against the allowance).

Results go to stdout: the API's records as JSON (``--format text`` for a table), ``quota``
for people (``--format json`` for programs); messages go to stderr.
Write bodies are given as JSON with the API's own field names (``--data '{"name": ...}'``,
``--data @file.json`` or ``--data -`` for stdin) and checked before anything is sent.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

import click
import msgspec
from rich.console import Console
from rich.table import Table

from asyncwifi._instant import format_instant
from asyncwifi._rules import HOTSPOT_UPDATE_FORBIDDEN
from asyncwifi.cli._app import App, pass_app, run_async
from asyncwifi.cli._config import rate_store_option
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._objects import client_standing, objects_lines, objects_report
from asyncwifi.cli._options import ACCOUNT, OUTPUT, Command, Group, global_options
from asyncwifi.cli._types import format_option
from asyncwifi.cli._words import plural
from asyncwifi.errors import ValidationError
from asyncwifi.models import HotspotCreate, HotspotUpdate

__all__ = ["hotspots_group", "quota_command", "segments_group"]

S = TypeVar("S", bound=msgspec.Struct)

#: records of the API: json by default, for the programs that read them
_records_format = format_option(
    "json", "json: the API's records, for programs; text: a table, for people."
)


def _emit(data: Any, fmt: str, columns: Sequence[str] = ()) -> None:
    builtins = msgspec.to_builtins(data)
    if fmt == "text" and columns:
        rows = builtins if isinstance(builtins, list) else [builtins]
        cells = [["" if row.get(c) is None else str(row.get(c)) for c in columns] for row in rows]
        table = Table()
        for i, column in enumerate(columns):
            # ids are copied from here into the next command: never cut or folded
            whole = column == "id" or column.endswith("Id")
            longest = max((len(r[i]) for r in cells), default=0)
            table.add_column(column, no_wrap=whole, min_width=longest if whole else None)
        for row_cells in cells:
            table.add_row(*row_cells)
        Console().print(table)
        return
    click.echo(json.dumps(builtins, indent=2, ensure_ascii=False))


def _body(text: str, model: type[S], *, forbidden: frozenset[str] = frozenset()) -> S:
    """Decode a write body from ``--data``: JSON text, ``@file`` or ``-`` (stdin)."""
    if text == "-":
        raw = sys.stdin.read()
    elif text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as fh:
                raw = fh.read()
        except OSError as exc:
            raise click.BadParameter(
                f"cannot read {text[1:]}: {exc.strerror}", param_hint="'--data'"
            ) from None
    else:
        raw = text
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="'--data'") from None
    if not isinstance(data, dict):
        raise click.BadParameter("must be a JSON object", param_hint="'--data'")
    bad = sorted(set(data) & forbidden)
    if bad:
        raise click.BadParameter(
            f"{', '.join(bad)} cannot be changed by an update (spec §4.3)", param_hint="'--data'"
        )
    known = {f.encode_name for f in msgspec.structs.fields(model)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise click.BadParameter(
            f"unknown {plural(len(unknown), 'field')} {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}",
            param_hint="'--data'",
        )
    try:
        return msgspec.convert(data, model)
    except msgspec.ValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="'--data'") from None


def _in_wire_names(message: str, model: type[msgspec.Struct]) -> str:
    """``venue_id is required`` -> ``venueId is required``: the names the user typed."""
    names = {f.name: f.encode_name for f in msgspec.structs.fields(model)}
    pattern = r"\b(" + "|".join(re.escape(n) for n in names) + r")\b"
    return re.sub(pattern, lambda m: names[m.group(1)], message)


def _checked_write(model: type[msgspec.Struct], go: Any) -> Any:
    """Run a write; a body the client refuses is a usage error worded in wire names."""
    try:
        return run_async(go())
    except ValidationError as exc:
        raise CliFailure(
            f"invalid --data: {_in_wire_names(str(exc), model)}", ExitCode.USAGE
        ) from None


# -- hotspots --------------------------------------------------------------------------------

_HOTSPOT_COLUMNS = ("id", "name", "macAddress", "hotspotIdentifier", "city", "country", "deleted")


@click.group("hotspots", cls=Group)
def hotspots_group() -> None:
    """Hotspots (Wi-Fi access points), spec §4.3."""


@hotspots_group.command("list")
@click.option("--name", default=None, help="Name filter.")
@click.option("--mac", "mac_address", default=None, help="MAC address filter.")
@click.option("--identifier", "hotspot_identifier", default=None, help="Hotspot identifier.")
@click.option("--venue-id", default=None, help="Venue (location) id.")
@click.option(
    "--date-gt", type=click.DateTime(["%Y-%m-%d"]), metavar="YYYY-MM-DD", help="Date after."
)
@click.option(
    "--date-lt", type=click.DateTime(["%Y-%m-%d"]), metavar="YYYY-MM-DD", help="Date before."
)
@click.option("--deleted/--not-deleted", default=False, show_default=True, help="Deleted ones.")
@_records_format
@global_options(ACCOUNT, OUTPUT)
@pass_app
def hotspots_list(
    app: App,
    name: str | None,
    mac_address: str | None,
    hotspot_identifier: str | None,
    venue_id: str | None,
    date_gt: datetime | None,
    date_lt: datetime | None,
    deleted: bool,
    fmt: str,
) -> None:
    """List the organization's hotspots."""
    app.check_credentials()

    async def go() -> Any:
        async with app.client() as api:
            return await api.hotspots.list(
                name=name,
                mac_address=mac_address,
                hotspot_identifier=hotspot_identifier,
                venue_id=venue_id,
                date_gt=date_gt.date() if date_gt else None,
                date_lt=date_lt.date() if date_lt else None,
                deleted=deleted,
            )

    _emit(run_async(go()), fmt, _HOTSPOT_COLUMNS)


@hotspots_group.command("get")
@click.argument("hotspot_id")
@click.option("--by-identifier", is_flag=True, help="HOTSPOT_ID is the dashboard identifier.")
@_records_format
@global_options(ACCOUNT, OUTPUT)
@pass_app
def hotspots_get(app: App, hotspot_id: str, by_identifier: bool, fmt: str) -> None:
    """Show one hotspot."""
    app.check_credentials(organization=False)

    async def go() -> Any:
        async with app.client(organization=False) as api:
            if by_identifier:
                return await api.hotspots.get_by_identifier(hotspot_id)
            return await api.hotspots.get(hotspot_id)

    _emit(run_async(go()), fmt, _HOTSPOT_COLUMNS)


@hotspots_group.command("create")
@click.option("--data", required=True, help="JSON body (API field names), @FILE or - for stdin.")
@global_options(ACCOUNT, OUTPUT)
@pass_app
def hotspots_create(app: App, data: str) -> None:
    """Create a hotspot (never two, even if the answer is lost)."""
    body = _body(data, HotspotCreate)
    app.check_credentials()

    async def go() -> Any:
        async with app.client() as api:
            if body.organization_id is msgspec.UNSET and api.organization:
                wanted = msgspec.structs.replace(body, organization_id=api.organization)
            else:
                wanted = body
            return await api.hotspots.create(wanted)

    _emit(_checked_write(HotspotCreate, go), "json")


@hotspots_group.command("update")
@click.argument("hotspot_id")
@click.option("--data", required=True, help="JSON body (API field names), @FILE or - for stdin.")
@global_options(ACCOUNT, OUTPUT)
@pass_app
def hotspots_update(app: App, hotspot_id: str, data: str) -> None:
    """Update a hotspot: only the fields given are sent."""
    body = _body(data, HotspotUpdate, forbidden=HOTSPOT_UPDATE_FORBIDDEN)
    app.check_credentials(organization=False)

    async def go() -> Any:
        async with app.client(organization=False) as api:
            return await api.hotspots.update(hotspot_id, body)

    _emit(_checked_write(HotspotUpdate, go), "json")


@hotspots_group.command("delete")
@click.argument("hotspot_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@global_options(ACCOUNT, OUTPUT)
@pass_app
def hotspots_delete(app: App, hotspot_id: str, yes: bool) -> None:
    """Delete a hotspot."""
    app.check_credentials(organization=False)
    if not yes and not sys.stdin.isatty():
        raise click.UsageError("no terminal to confirm on: pass --yes to delete")
    if not yes:
        click.confirm(f"delete hotspot {hotspot_id}?", abort=True, err=True)

    async def go() -> Any:
        async with app.client(organization=False) as api:
            return await api.hotspots.delete(hotspot_id)

    _emit(run_async(go()), "json")


# -- segments and quota ----------------------------------------------------------------------


@click.group("segments", cls=Group)
def segments_group() -> None:
    """Segments (dynamic groups of contacts), spec §4.4."""


@segments_group.command("list")
@_records_format
@global_options(ACCOUNT, OUTPUT)
@pass_app
def segments_list(app: App, fmt: str) -> None:
    """List the organization's segments."""
    app.check_credentials()

    async def go() -> Any:
        async with app.client() as api:
            return await api.segments.list()

    _emit(run_async(go()), fmt, ("id", "name", "segmentStatus", "audience", "lastRun"))


def _when(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return format_instant(epoch, "seconds")


@click.command("quota", cls=Command)
@format_option("text", "text: tables and lines, for people; json: one object, for programs.")
@rate_store_option(
    "Read the key's counts in Redis: the objects of the month and day are then every "
    "process's (without it, only this command's, which exchanges none)."
)
@global_options(ACCOUNT, OUTPUT)
@pass_app
def quota_command(app: App, fmt: str, rate_store: str | None) -> None:
    """Show the quota left: requests per window, and the objects (spec §8) of this UTC
    month and day by kind against the month's allowance (--allowance). Spends one request:
    the login, whose answer carries the counts; the objects are read from the limiter's
    store."""
    app.check_credentials(organization=False)

    async def go() -> dict[str, Any]:
        async with app.client(organization=False, rate_store=rate_store) as api:
            await api.login()
            standing = await client_standing(api, shared=rate_store is not None)
            await api.scheduler.objects(period="day")
            snap = api.quota
            windows = {}
            for name, window in snap.windows.items():
                windows[name] = {
                    "limit": window.limit,
                    "remaining": window.remaining,
                    "reset_at": _when(window.reset_at),
                    "source": window.source,
                }
            return {
                "taken_at": _when(snap.taken_at),
                "windows": windows,
                "paused_until": _when(snap.paused_until),
                "mode": snap.mode,
                "requests_spent_by_this_command": api.logins,
                "objects": objects_report(snap.volume, standing),
            }

    result = run_async(go())
    if fmt == "text":
        rows = [{"window": k, **v} for k, v in result["windows"].items()]
        _emit(rows, "text", ("window", "limit", "remaining", "reset_at", "source"))
        objects = result["objects"]
        _emit(objects["by_kind"], "text", ("kind", "this_month", "today", "allowance", "left"))
        for line in objects_lines(objects):
            click.echo(line)
        return
    _emit(result, "json")
