"""The ``asyncwifi`` command's click group and its one-line errors (``asyncwifi[cli]``).

``run()`` is what the console script (``asyncwifi.cli.main``) runs once click is there;
the exit statuses are :class:`~asyncwifi.cli.ExitCode`'s.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import click

from asyncwifi._version import __version__
from asyncwifi.cli._app import App, _configure_logging
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._export import contacts_group, events_group
from asyncwifi.cli._options import ACCOUNT, OUTPUT, Group, global_options
from asyncwifi.cli._resources import hotspots_group, quota_command, segments_group
from asyncwifi.cli._serve import webhooks_group
from asyncwifi.cli._simulator_command import simulate_command

__all__ = ["cli", "run"]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="asyncwifi")
@global_options(ACCOUNT, OUTPUT, root=True)
@click.option("--sim-start", type=float, default=None, hidden=True)
@click.pass_context
def cli(ctx: click.Context, sim_start: float | None) -> None:
    """asyncwifi: the guest Wi-Fi platform API from the command line.

    Credentials come from ASYNCWIFI_CLIENT_KEY, ASYNCWIFI_CLIENT_SECRET, ASYNCWIFI_BASE_URL
    and ASYNCWIFI_ORGANIZATION, or from the --config file. Try it with no account:

    \b
        asyncwifi --simulate events backfill \\
            --since 2026-01-01 --until 2026-01-08 --out events.jsonl

    The options below (--version aside) are also accepted after the commands they
    matter to: asyncwifi sync --allowance 20000 ... (COMMAND --help lists them).
    """
    app: App = ctx.ensure_object(App)
    app.sim.start = sim_start
    _configure_logging(app.display.log_format, app.verbose)


cli.add_command(events_group)
contacts_group.add_command(__import__("asyncwifi.cli._erase", fromlist=["_"]).erase_command)
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
    from asyncwifi.engine import (
        DestinationNotWritableError,
        DestinationPermissionError,
        StateMismatchError,
    )
    from asyncwifi.errors import (
        AsyncWifiError,
        ConfigurationError,
        QuotaExhaustedError,
        UnauthorizedError,
        ValidationError,
    )

    if isinstance(exc, DestinationPermissionError):  # as the sync says it (``_sync_start``)
        return ExitCode.NOPERM, str(exc)
    if isinstance(exc, DestinationNotWritableError):  # an export's output or state file
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
    except click.exceptions.Abort as exc:
        # click's word for a Ctrl-C (or a SIGTERM: asyncwifi.cli) inside a command; a
        # prompt declined (hotspots delete) is an abort
        stopped = isinstance(exc.__cause__, KeyboardInterrupt)
        _error("interrupted" if stopped else "aborted")
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
