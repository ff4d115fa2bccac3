"""``asyncwifi contacts erase CID...``: erase contacts upstream and from every mirror, for
good (issue 41; ``asyncwifi.sync.erase_contacts``, docs/guides/privacy.md).

The ids are checked and the ``--to`` database opened before any request; each contact is
deleted upstream (one request each), then erased from the database in one transaction,
with a suppression that every later write honours (another mirror: run it again with its
``--to``; the upstream delete then answers 404 and the mirror is erased all the same).
What it did goes to stdout as JSON; a contact whose upstream delete failed is named on
stderr (exit 1) and left in the mirror.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from asyncwifi.cli._app import App, pass_app
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._options import ACCOUNT, OUTPUT, Command, global_options
from asyncwifi.cli._sync_start import open_at_start, run_on_database
from asyncwifi.cli._words import counted

__all__ = ["erase_command"]


@click.command("erase", cls=Command)
@click.argument("cids", nargs=-1, required=True, metavar="CID...")
@click.option("--to", "url", required=True,
              help="The mirror to erase them from: sqlite:///PATH or postgresql://USER@HOST/DB "
              "(as sync --to; another mirror: run it again with that --to).")  # fmt: skip
@click.option("--pii-key-file", default=None, metavar="PATH",
              help="The key the suppressions are hashed with (HMAC-SHA256; default: "
              "ASYNCWIFI_PII_KEY; none: plain SHA-256). Give the syncs the same key.")  # fmt: skip
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@global_options(ACCOUNT, OUTPUT)
@pass_app
def erase_command(
    app: App, cids: tuple[str, ...], url: str, pii_key_file: str | None, yes: bool
) -> None:
    """Erase contacts: delete them upstream (DELETE /v1/customers/CID), then purge each
    one's row, events and dead letters from the --to mirror in one transaction, and
    suppress them there: no later sync, lookback or reconcile writes them back. SQLite
    zeroes the erased bytes in the file."""
    from asyncwifi.engine import Erased, Suppression, check_cids, open_destination
    from asyncwifi.errors import ValidationError
    from asyncwifi.sync import erase_contacts

    try:
        wanted = check_cids(cids)
    except ValidationError as exc:
        raise CliFailure(str(exc), ExitCode.USAGE) from None
    try:
        suppression = Suppression.resolve(key_file=pii_key_file)
    except ValidationError as exc:
        raise CliFailure(str(exc), ExitCode.CONFIG) from None
    open_destination(url)  # a wrong URL is refused before anything
    app.check_credentials()
    if not yes and not sys.stdin.isatty():
        raise click.UsageError("no terminal to confirm on: pass --yes to erase")
    if not yes:
        click.confirm(f"erase {counted(len(wanted), 'contact')} for good?", abort=True, err=True)

    async def go() -> dict[str, Any]:
        async with app.client() as api:
            store = open_destination(url, organization=api.organization)
            try:
                await open_at_start(store, url)  # it answers, before any delete
                done = await erase_contacts(api, wanted, [store], suppression=suppression)
            finally:
                await store.close()
        erased = done.destinations[0][1] if done.destinations else Erased()
        app.display.info(
            "erase",
            f"{_redacted(url)}: {counted(erased.contacts, 'contact')}, "
            f"{counted(erased.events, 'event')}, "
            f"{counted(erased.dead_letters, 'dead letter')} erased; "
            f"{counted(erased.suppressions, 'suppression')} recorded ({suppression.method})",
        )
        if done.failed:
            cid, why = next(iter(done.failed.items()))
            more = f" (and {len(done.failed) - 1} more)" if len(done.failed) > 1 else ""
            raise CliFailure(f"contact {cid} was not deleted upstream: {why}{more}")
        return {
            "upstream": done.upstream,
            "to": _redacted(url),
            "erased": vars(erased),
            "suppression": suppression.method,
        }

    result = run_on_database(go(), url)
    click.echo(json.dumps(result, indent=2))


def _redacted(url: str) -> str:
    from asyncwifi._auth import redact_url

    return redact_url(url)
