"""What ``asyncwifi sync`` checks before its first request for data: the database answers
(``open_at_start``) and no other sync of the organization writes into it
(``claim_lease``, see ``asyncwifi.sync._lease``)."""

from __future__ import annotations

from asyncwifi._auth import redact_url
from asyncwifi.cli._app import App
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.sync._destination import Destination
from asyncwifi.sync._lease import LeaseHeldError, LeaseKeeper

__all__ = ["claim_lease", "open_at_start"]


async def open_at_start(destination: Destination, url: str) -> None:
    """Open the database once, before the sync: one that cannot be reached (exit 69) or
    refuses us (exit 78) at start is a setting to fix, named, not an outage to wait for
    (the sync waits only for a database that answered before)."""
    from asyncwifi._auth import hide_password, redact_url
    from asyncwifi.errors import ConfigurationError
    from asyncwifi.sync import DestinationUnavailableError

    try:
        await destination.open()
    except (DestinationUnavailableError, ConfigurationError) as exc:
        await destination.close()
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
