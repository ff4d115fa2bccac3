"""The ``asyncwifi`` command's click group and its one-line errors (``asyncwifi[cli]``).

``run()`` is what the console script (``asyncwifi.cli.main``) runs once click is there;
the exit statuses are :class:`~asyncwifi.cli.ExitCode`'s.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from asyncwifi._client import ALLOWANCE_ENV
from asyncwifi._version import __version__
from asyncwifi.cli._app import App, SimOptions, _configure_logging, output_options
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._export import contacts_group, events_group
from asyncwifi.cli._resources import hotspots_group, quota_command, segments_group
from asyncwifi.cli._serve import webhooks_group
from asyncwifi.cli._simulator_command import simulate_command

__all__ = ["cli", "run"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="asyncwifi")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="TOML file with client_key, client_secret, base_url, organization "
    "(default: ~/.config/asyncwifi/config.toml; environment variables win).",
)
@click.option("--allow-http", is_flag=True, help="Allow a plain-http base URL (a local simulator).")
@click.option(
    "--allowance",
    envvar=ALLOWANCE_ENV,
    metavar="TEXT",
    default=None,
    help="The month's object allowance (spec §8): objects a month (20000) or the "
    "subscription's terms ('10 access points': 2,000 each; '2000 contacts': 10 each). "
    f"Dry runs, progress and quota say what is left of it; once it is spent, requests "
    f"for objects stop until the 1st (or set {ALLOWANCE_ENV}).",
)
@click.option(
    "--simulate",
    is_flag=True,
    help="Run against an embedded simulator (in this process, fast clock, seeded data): "
    "no account needed.",
)
@click.option(
    "--sim-speed",
    type=click.FloatRange(min=0.001, max=1_000_000),
    default=SimOptions.speed,
    show_default=True,
    help="--simulate: clock speed.",
)
@click.option(
    "--sim-seed",
    type=int,
    default=SimOptions.seed,
    show_default=True,
    help="--simulate: data seed.",
)
@click.option(
    "--sim-events-per-day",
    type=click.IntRange(0),
    default=SimOptions.events_per_day,
    show_default=True,
    help="--simulate: events generated per day of the requested range.",
)
@click.option(
    "--sim-day-limit",
    type=click.IntRange(1),
    default=SimOptions.day_limit,
    show_default=True,
    help="--simulate: requests per day.",
)
@click.option("--sim-start", type=float, default=None, hidden=True)
@click.option("-v", "--verbose", count=True, help="Log more (-v: info, -vv: debug; never secrets).")
@output_options
@click.pass_context
def cli(
    ctx: click.Context,
    config: Path | None,
    allow_http: bool,
    allowance: str | None,
    simulate: bool,
    sim_speed: float,
    sim_seed: int,
    sim_events_per_day: int,
    sim_day_limit: int,
    sim_start: float | None,
    verbose: int,
) -> None:
    """asyncwifi: the guest Wi-Fi platform API from the command line.

    Credentials come from ASYNCWIFI_CLIENT_KEY, ASYNCWIFI_CLIENT_SECRET, ASYNCWIFI_BASE_URL
    and ASYNCWIFI_ORGANIZATION, or from the --config file. Try it with no account:

    \b
        asyncwifi --simulate events backfill \\
            --since 2026-01-01 --until 2026-01-08 --out events.jsonl
    """
    app: App = ctx.ensure_object(App)
    app.config = config
    app.allow_http = allow_http
    app.allowance = _allowance(ctx, allowance)
    app.sim = SimOptions(
        enabled=simulate,
        speed=sim_speed,
        seed=sim_seed,
        events_per_day=sim_events_per_day,
        day_limit=sim_day_limit,
        start=sim_start,
    )
    _configure_logging(app.display.log_format, verbose)


def _allowance(ctx: click.Context, text: str | None) -> Mapping[str, int]:
    """``--allowance`` (or its variable) checked by the limiter's one rule: a bad value is
    one usage line (exit 2) before anything is read or sent."""
    from asyncwifi.errors import ValidationError
    from asyncwifi.ratelimit._volume import allowance_of

    source = ctx.get_parameter_source("allowance")
    what = ALLOWANCE_ENV if source is click.core.ParameterSource.ENVIRONMENT else "--allowance"
    try:
        return allowance_of(text.strip() if text is not None else None, what)
    except ValidationError as exc:
        raise click.UsageError(str(exc), ctx) from None


cli.add_command(events_group)
cli.add_command(contacts_group)
cli.add_command(hotspots_group)
cli.add_command(segments_group)
cli.add_command(quota_command)
cli.add_command(simulate_command)
cli.add_command(webhooks_group)
cli.add_command(__import__("asyncwifi.cli._sync", fromlist=["_"]).sync_command)
cli.add_command(__import__("asyncwifi.cli._fleet", fromlist=["_"]).fleet_group)


def _status_for(exc: BaseException) -> tuple[ExitCode, str] | None:
    """The exit status and one-line message for an error of the SDK, or None."""
    from asyncwifi._instant import format_instant
    from asyncwifi.backfill import (
        OutputNotWritableError,
        StateMismatchError,
    )
    from asyncwifi.errors import (
        AsyncWifiError,
        ConfigurationError,
        QuotaExhaustedError,
        UnauthorizedError,
        ValidationError,
    )

    if isinstance(exc, OutputNotWritableError):
        return ExitCode.CANT_CREATE, str(exc)
    if isinstance(exc, StateMismatchError):
        return ExitCode.DATA, str(exc)
    if isinstance(exc, ConfigurationError):
        return ExitCode.CONFIG, str(exc)
    if isinstance(exc, UnauthorizedError):
        return ExitCode.CONFIG, f"the API refused the credentials: {exc}"
    if isinstance(exc, ValidationError):
        return ExitCode.USAGE, str(exc)
    if isinstance(exc, QuotaExhaustedError):
        when = format_instant(exc.reset_at, "seconds")
        # spec §8: "month" (every kind) or "month:<kind>" is the month's object allowance
        spent = "month's object allowance" if exc.limit.startswith("month") else "day's quota"
        return ExitCode.TEMPFAIL, f"the {spent} is spent; it resets at {when}"
    if isinstance(exc, AsyncWifiError):
        return ExitCode.FAILURE, str(exc)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return ExitCode.FAILURE, f"{exc.strerror or exc}{where}"
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _status_for(inner)
            if found is not None:
                return found
    return None


def run(argv: Sequence[str] | None = None, *, exit: bool = True) -> int:
    """Run the command, print any error as one line, return the status (see ``main``;
    ``exit``: with ``argv=None``, exit the process with it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    # the command sets up the SDK logger for its own output; called in-process (tests,
    # embedding), it must leave the logger as it found it, not bound to a closed stream
    sdk_logger = logging.getLogger("asyncwifi")
    saved = (list(sdk_logger.handlers), sdk_logger.propagate, sdk_logger.level)
    try:
        code = _main(args)
    finally:
        sdk_logger.handlers[:], sdk_logger.propagate, sdk_logger.level = saved
    if argv is None and exit:
        sys.exit(code)
    return code


def _error(message: str) -> None:
    if message:
        first = message.strip().splitlines()[0] if message.strip() else message
        click.echo(f"asyncwifi: error: {first}", err=True)


def _main(args: list[str]) -> int:
    try:
        result = cli.main(args=args, prog_name="asyncwifi", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        # a bare group (``asyncwifi``, ``asyncwifi events``): its help, not an error
        if exc.ctx is not None:
            click.echo(exc.ctx.get_help())
        return ExitCode.OK
    except click.UsageError as exc:
        hint = ""
        if exc.ctx is not None:
            hint = f" (see: {exc.ctx.command_path} --help)"
        _error(exc.format_message().replace("\n", " ") + hint)
        return ExitCode.USAGE
    except click.exceptions.Abort:
        _error("aborted")
        return ExitCode.INTERRUPTED
    except click.ClickException as exc:
        _error(exc.format_message())
        return exc.exit_code
    except CliFailure as exc:
        _error(exc.message)
        return exc.code
    except KeyboardInterrupt:
        _error("interrupted")
        return ExitCode.INTERRUPTED
    except Exception as exc:
        found = _status_for(exc)
        if found is None:
            raise
        code, message = found
        _error(message)
        return code
    return result if isinstance(result, int) else ExitCode.OK
