"""``asyncwifi simulate``: the simulator's one command line.

``python -m asyncwifi.cli simulate`` and :class:`~asyncwifi.testing.SimulatorProcess` run this
same command, so every option of the simulator is defined here once. The events it serves
lie in ``--events-start .. --events-end`` (default January 2024): the banner says so, and a
backfill of another range finds nothing.
"""

from __future__ import annotations

import json
from typing import Any

import click

from asyncwifi._instant import format_instant
from asyncwifi.cli._app import App, pass_app
from asyncwifi.cli._exit import CliFailure
from asyncwifi.cli._options import OUTPUT, Command, deprecated_alias, global_options
from asyncwifi.cli._types import duration_option, format_option
from asyncwifi.testing import MODES, Simulator

__all__ = ["simulate_command"]


def _instant(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """ISO 8601 (no zone = UTC) or epoch seconds."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    from asyncwifi._instant import parse_instant

    try:
        return parse_instant(value).timestamp()
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _object_limits(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> dict[str, int]:
    limits: dict[str, int] = {}
    for item in value:
        name, _, count = item.partition("=")
        if not name or not count.isdigit():
            raise click.BadParameter(
                f"{item!s} is not NAME=COUNT (e.g. hotspots=10)", ctx=ctx, param=param
            )
        limits[name] = int(count)
    return limits


def _faults(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    from asyncwifi.testing import Faults

    try:
        return Faults.from_dict(json.loads(value))
    except (ValueError, TypeError) as exc:
        raise click.BadParameter(
            f"not the JSON fields of Faults: {exc}", ctx=ctx, param=param
        ) from None


def _default_range() -> str:
    from asyncwifi.testing import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START

    start, end = (
        format_instant(t, "seconds")[:10] for t in (DEFAULT_EVENTS_START, DEFAULT_EVENTS_END)
    )
    return f"{start} to {end}"


#: the simulator's one set of defaults: ``Simulator()``'s, ``SimulatorProcess``'s and
#: ``--simulate``'s (``Simulator.DEFAULTS``); every option below reads it
D = Simulator.DEFAULTS


@click.command("simulate", cls=Command, epilog=f"Default event range: {_default_range()} (UTC).")
@click.option("--host", default=D.host, show_default=True, help="Interface to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65_535),
    default=D.port,
    show_default=True,
    help="Port to listen on; 0: any.",
)
@click.option(
    "--speed",
    type=click.FloatRange(min=0.001, max=1_000_000),
    default=D.speed,
    show_default=True,
    help="Clock speed: minute and day windows, scroll and token lifetimes run this much faster.",
)
@click.option(
    "--seed", type=int, default=D.seed, show_default=True, help="Seed of the generated data."
)
@click.option(
    "--events",
    type=click.IntRange(0),
    default=D.events,
    show_default=True,
    help="How many events to serve, spread over the event range.",
)
@click.option(
    "--events-start",
    callback=_instant,
    metavar="DATE",
    default=None,
    help=f"Start of the events' range (ISO 8601 or epoch; default {_default_range()[:10]}).",
)
@click.option(
    "--events-end",
    callback=_instant,
    metavar="DATE",
    default=None,
    help=f"End of the events' range (ISO 8601 or epoch; default {_default_range()[-10:]}).",
)
@click.option("--contacts", type=click.IntRange(0), default=D.contacts, show_default=True,
              help="How many contacts to serve.")  # fmt: skip
@click.option("--hotspots", type=click.IntRange(0), default=D.hotspots, show_default=True,
              help="How many hotspots to serve.")  # fmt: skip
@click.option("--segments", type=click.IntRange(0), default=D.segments, show_default=True,
              help="How many segments to serve.")  # fmt: skip
@click.option("--minute-limit", type=click.IntRange(1), default=D.minute_limit,
              show_default=True, help="Requests a minute (the gateway's).")  # fmt: skip
@click.option("--day-limit", type=click.IntRange(1), default=D.day_limit,
              show_default=True, help="Requests a day (the gateway's).")  # fmt: skip
@click.option(
    "--rate-limit-mode",
    type=click.Choice(MODES),
    default=D.rate_limit_mode,
    show_default=True,
    help="Gateway windows aligned to UTC (fixed), strict sliding, or no limit.",
)
@deprecated_alias("--mode", use="--rate-limit-mode", target="rate_limit_mode",
                  type=click.Choice(MODES))  # fmt: skip
@click.option("--count-refused", is_flag=True, help="Refused requests count too.")
@click.option(
    "--fractional-reset/--whole-reset",
    default=None,
    help="Reset headers in fractional seconds (default: when --speed is not 1).",
)
@click.option(
    "--object-limit",
    "object_limits",
    multiple=True,
    callback=_object_limits,
    metavar="NAME=N",
    help="A per-object daily limit, e.g. hotspots=10.",
)
@click.option("--gone-path", multiple=True, help="A path pattern answered with 410.")
@duration_option("--scroll-ttl", min=0.001, default=D.scroll_ttl,
                 help="A scroll id's life, in the simulator's clock (--speed).")  # fmt: skip
@click.option("--scroll-single-use", is_flag=True, help="A scroll id answers once.")
@click.option(
    "--contacts-max-size",
    type=click.IntRange(1),
    default=D.contacts_max_size,
    show_default=True,
    help="The largest contact page size accepted; more is a 409 (100: the reference's).",
)
@click.option(
    "--event-shape",
    type=click.Choice(("nested", "flat", "dated")),
    default=D.event_shape,
    show_default=True,
    help="Event records as the vendor's example (nested), the spec's schema with no time "
    "(flat), or flat with the legacy date field (dated).",
)
@duration_option("--token-ttl", min=0.001, default=D.token_ttl,
                 help="An access token's life, in the simulator's clock (--speed).")  # fmt: skip
@click.option(
    "--orgs",
    "organizations",
    type=click.IntRange(1, 100_000),
    default=1,
    show_default=True,
    help="Organizations to serve, each with its own key, data (seed + i) and limits.",
)
@click.option(
    "--fleet-toml",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the organizations' fleet.toml here (base_url and each one's key and "
    "secret) instead of printing their exports.",
)
@click.option(
    "--live-events-per-second",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="New events each organization gains per clock second while serving.",
)
@click.option(
    "--faults", callback=_faults, default=None, help="JSON, e.g. '{\"error_rate\": 0.1}'."
)
@click.option("--warm", is_flag=True, help="Encode every event before serving.")
@format_option("text", "text: a summary and export lines, for people; json: one line, for "
               "programs (SimulatorProcess reads it).")  # fmt: skip
@deprecated_alias("--json", use="--format json", target="fmt", stands_for="json")
@click.option("--organization", default=None, hidden=True)
@click.option("--client-key", default=None, hidden=True)
@click.option("--client-secret", default=None, hidden=True)
@click.option("--clock-start", type=float, default=None, hidden=True)
@click.option("--clock-anchor", type=float, default=None, hidden=True)
@global_options(OUTPUT)
@pass_app
def simulate_command(app: App, /, **opts: Any) -> None:
    """Serve the simulator of the whole API until Ctrl-C.

    It prints the base URL, the (simulated) credentials as export lines and the range
    of the events it serves; with --orgs N, each organization's (or a fleet.toml with
    --fleet-toml). It speaks plain http: the SDK and this command accept that with
    ASYNCWIFI_ALLOW_HTTP=1 (the export line sets it).
    """
    from asyncwifi.testing import AnchoredClock, run_simulator

    start, end = opts.pop("events_start"), opts.pop("events_end")
    if start is not None and end is not None and start >= end:
        raise click.UsageError("--events-start must be before --events-end")
    if start is not None:
        opts["events_start"] = start
    if end is not None:
        opts["events_end"] = end
    clock_start, clock_anchor = opts.pop("clock_start"), opts.pop("clock_anchor")
    if clock_start is not None and clock_anchor is not None:
        opts["clock"] = AnchoredClock(opts["speed"], clock_start, clock_anchor)
    if opts["fractional_reset"] is None:
        # one clock second lasts 1/speed real seconds: whole-second resets would overshoot
        opts["fractional_reset"] = opts["speed"] != 1.0
    opts["gone_paths"] = opts.pop("gone_path") or None
    if opts["gone_paths"] is None:
        del opts["gone_paths"]
    if opts["faults"] is None:
        del opts["faults"]
    opts["json_output"] = opts.pop("fmt") == "json" or app.display.log_format == "json"
    try:
        run_simulator(**opts)
    except OSError as exc:
        raise CliFailure(
            f"cannot serve on {opts['host']}:{opts['port']}: {exc.strerror or exc}"
        ) from None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
