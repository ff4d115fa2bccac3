"""What ``asyncwifi sync`` checks before its first request for data: the database answers
(``open_at_start``) and no other sync of the organization writes into it
(``claim_lease``: the engine's ``LeaseKeeper``)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from asyncwifi._auth import redact_url
from asyncwifi.cli._app import App, run_async
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.engine import Destination, LeaseHeldError, LeaseKeeper

__all__ = ["claim_lease", "destination_failure", "open_at_start", "run_on_database"]

T = TypeVar("T")


def destination_failure(exc: BaseException, url: str) -> CliFailure | None:
    """The one line and status of a database that refuses the sync, at start or later: a
    right the role lacks (77), a file or folder that cannot be written or a full disk (73);
    None for any other error. The first such error of an exception group."""
    from asyncwifi._auth import hide_password
    from asyncwifi.engine import (
        DestinationFullError,
        DestinationNotWritableError,
        DestinationPermissionError,
    )

    if isinstance(exc, BaseExceptionGroup):
        found = (destination_failure(inner, url) for inner in exc.exceptions)
        return next((f for f in found if f is not None), None)
    line = f"--to {redact_url(url)}: {hide_password(str(exc), url)}"
    if isinstance(exc, DestinationPermissionError):
        return CliFailure(line, ExitCode.NOPERM)
    if isinstance(exc, DestinationNotWritableError):
        return CliFailure(line, ExitCode.CANT_CREATE)
    if isinstance(exc, DestinationFullError):
        return CliFailure(
            f"{line}; free some space and run it again (every batch written is kept)",
            ExitCode.CANT_CREATE,
        )
    return None


def run_on_database(coro: Coroutine[Any, Any, T], url: str) -> T:
    """Run a command's work on the database at ``url``: a database that refuses it later
    (rights, a full disk) or is gone for good is one line and its status, not a traceback."""
    from asyncwifi.engine import DestinationUnavailableError

    try:
        return run_async(coro)
    except CliFailure:
        raise
    except Exception as exc:
        refused = destination_failure(exc, url)
        if refused is not None:
            raise refused from None
        if isinstance(exc, DestinationUnavailableError):
            raise CliFailure(str(exc), ExitCode.FAILURE) from None
        raise


async def open_at_start(destination: Destination, url: str) -> None:
    """Open the database once, before the sync: one that cannot be reached (exit 69),
    cannot be written (73, 77) or refuses us (78) at start is a setting to fix, named, not
    an outage to wait for (the sync waits only for a database that answered before)."""
    from asyncwifi._auth import hide_password, redact_url
    from asyncwifi.engine import DestinationUnavailableError
    from asyncwifi.errors import ConfigurationError

    try:
        await destination.open()
    except (DestinationUnavailableError, ConfigurationError) as exc:
        await destination.close()
        refused = destination_failure(exc, url)
        if refused is not None:
            raise refused from None
        # the library's own words (the cause), once: the URL is named by the setting
        reason = hide_password(str(exc.__cause__ or exc), url)
        if isinstance(exc, ConfigurationError):
            raise CliFailure(f"--to {redact_url(url)}: {reason}", ExitCode.CONFIG) from None
        raise CliFailure(
            f"--to {redact_url(url)}: the database cannot be reached at start ({reason}); "
            "check the host, the port and that it runs",
            ExitCode.UNAVAILABLE,
        ) from None


async def claim_lease(
    app: App, destination: Destination, url: str, wait: bool, ttl: float
) -> LeaseKeeper:
    """The organization's lease, taken; held by another sync: exit 75 naming it, or with
    ``--wait-for-lease`` a line saying so and a wait (a stop ends it)."""
    keeper = LeaseKeeper(destination, ttl=ttl)

    def waiting(held: LeaseHeldError) -> None:
        app.display.warning(
            "sync", f"{held}; waiting for it (--wait-for-lease); SIGTERM or Ctrl-C to stop"
        )

    try:
        await keeper.claim(wait=wait, on_wait=waiting)
    except LeaseHeldError as exc:
        await destination.close()
        raise CliFailure(
            f"--to {redact_url(url)}: {exc}; stop it, or pass --wait-for-lease to wait for it",
            ExitCode.TEMPFAIL,
        ) from None
    except BaseException:
        await destination.close()
        raise
    return keeper
