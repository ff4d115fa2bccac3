"""``asyncwifi events backfill`` and ``asyncwifi contacts export``: resumable bulk exports.

Every check (dates, range, types, slice size, output and state files, credentials) runs
before anything is written or sent. Dates without a zone are UTC; ``--until`` is
exclusive, so ``--since A --until B`` then ``--since B --until C`` never overlap.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from asyncwifi._instant import format_instant
from asyncwifi._protocol import EVENT_TYPES
from asyncwifi._resources import PageSize, page_size
from asyncwifi.backfill import (
    ExportJob,
    JobOutcome,
    contacts_export,
    contacts_params,
    even_slice_size,
    events_backfill,
    events_params,
    plan_slices,
)
from asyncwifi.cli._app import App, pass_app, run_async
from asyncwifi.cli._config import rate_store_option
from asyncwifi.cli._dry_run import DEFAULT_EVENTS_PER_DAY, dry_run_plan
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._files import check_export_files, remove_if_unused, writing
from asyncwifi.cli._objects import client_standing, contacts_plan
from asyncwifi.cli._options import (
    ACCOUNT,
    OUTPUT,
    Group,
    deprecated_alias,
    global_options,
    pii_options,
    pii_policy,
)
from asyncwifi.cli._progress import requests_sent
from asyncwifi.cli._types import InstantType, PageSizeType, duration_option, events_page
from asyncwifi.cli._words import plural
from asyncwifi.engine import JobParams, JsonlDestination, LockHeldError

__all__ = ["contacts_group", "events_group"]


def _contacts_page(size: int | str) -> PageSize:
    """``max`` or a number, by the contact list's one rule (``contacts.page_size``)."""
    return page_size(size, "--page-size")


def _types(ctx: click.Context, param: click.Parameter, value: Sequence[str]) -> list[str] | None:
    names: list[str] = []
    for item in value:
        if not item.strip(" ,"):
            # an empty list is a mistake (a variable that was not set), not "every type"
            raise click.BadParameter(
                "is empty; leave --types out for every type", ctx=ctx, param=param
            )
        names.extend(t.strip() for t in item.split(",") if t.strip())
    unknown = [t for t in names if t not in EVENT_TYPES]
    if unknown:
        raise click.BadParameter(
            f"unknown event {plural(len(unknown), 'type')} {', '.join(unknown)}; "
            f"known: {', '.join(sorted(EVENT_TYPES))}",
            ctx=ctx,
            param=param,
        )
    return sorted(set(names)) or None


def _out_path(ctx: click.Context, param: click.Parameter, value: str) -> Path:
    if value in ("", "-"):
        raise click.BadParameter(
            "an export needs a file (it is truncated to its last checkpoint on resume), "
            "not standard output",
            ctx=ctx,
            param=param,
        )
    return Path(value).expanduser()


def _state_for(out: Path, state: str | None) -> Path:
    if out.is_dir() or not out.name:
        raise CliFailure(f"output {out} is a directory: name a file", ExitCode.CANT_CREATE)
    return Path(state).expanduser() if state else out.with_name(out.name + ".state")


@contextlib.contextmanager
def _exporting(app: App, params: JobParams, *, state: Path, out: Path) -> Iterator[str]:
    """Preflight (credentials, then output and state: nothing is written) under the output's
    lock, held until the job and its cleanup are over: a second job into the same --out is
    refused at once, naming the first (exit 75). Yields the preflight's status."""
    app.check_credentials()
    check_export_files(out, state)
    lock = JsonlDestination.output_lock(out, params.kind)
    try:
        lock.acquire(share=True)  # the job's own writer shares it (``_lockfile``)
    except LockHeldError as exc:
        raise CliFailure(f"{exc}; wait for it to end, or stop it", ExitCode.TEMPFAIL) from None
    try:
        with writing(out, state):
            status = JsonlDestination.preflight(params, state_path=state, out_path=out)
        yield status
    finally:
        lock.release()


def _already_done(app: App, state: Path, noun: str, out: Path) -> None:
    info = JsonlDestination.read_only(state)
    app.display.info("done", f"already complete: {info.records:,} {noun} in {out} (nothing sent)")


def _run_export(
    app: App,
    job: Callable[[], Coroutine[Any, Any, JobOutcome]],
    *,
    out: Path,
    state: Path,
    status: str,
) -> JobOutcome:
    """Run the job; a new job that fails before its first commit leaves no file behind."""
    out_existed, state_existed = out.exists(), state.exists()
    try:
        with writing(out, state):
            return run_async(job())
    except BaseException:
        if status == "new" and not state_existed:
            remove_if_unused(out, state, out_existed=out_existed)
        raise


def _finish(app: App, outcome: JobOutcome, noun: str, out: Path) -> None:
    progress = outcome.progress
    if outcome.status == "paused":
        # the reporter said when to come back; the status tells scripts to retry later
        raise CliFailure("", ExitCode.TEMPFAIL)
    extra = ""
    if progress.duplicates_run:
        extra += f", {progress.duplicates_run:,} repeated records dropped"
    if progress.undecoded_run:
        extra += f", {progress.undecoded_run:,} records kept raw (did not match the model)"
    app.display.info(
        "done",
        f"done: {progress.records:,} {noun} in {out} ({progress.records_run:,} written by this "
        f"run with {progress.requests_run:,} requests{extra})",
        records=progress.records,
        records_run=progress.records_run,
        requests_run=progress.requests_run,
        out=str(out),
    )


async def _run_job(app: App, job: ExportJob) -> JobOutcome:
    """Run the job, its reporter watching beside it (it says why a run is quiet); the run's
    requests are then the limiter's count, the one every progress line showed."""
    watching = asyncio.ensure_future(job.reporter.watch())
    try:
        outcome = await job.run()
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        job.reporter.close()
    outcome.progress.requests_run = requests_sent(outcome.progress, job.api.quota)
    return outcome


_RATE_STORE_HELP = (
    "Share the key's quota with its other users in Redis; the month's objects are then "
    "every process's (what the dry run and the progress say is left of --allowance)."
)


def _export_options(fn: Any) -> Any:
    """What both exports take alike: waiting for the quota's reset, the key's shared store,
    and the global options."""
    options = [
        click.option(
            "--wait",
            is_flag=True,
            help="When the day's quota runs out, wait for the reset instead of exiting with 75.",
        ),
        deprecated_alias("--daemon", use="--wait", target="wait", stands_for=True),
        duration_option(
            "--max-wait",
            min=1.0,
            help="With --wait: exit with 75 instead when the reset is further away than this.",
        ),
        rate_store_option(_RATE_STORE_HELP),
        pii_options("every line written"),
        click.option("--fsync/--no-fsync", default=True, hidden=True),
        global_options(ACCOUNT, OUTPUT),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


# -- events ----------------------------------------------------------------------------------


@click.group("events", cls=Group)
def events_group() -> None:
    """Events of the organization (spec §4.5)."""


@events_group.command("backfill")
@click.option(
    "--since", required=True, type=InstantType(), help="Start (inclusive); no zone = UTC."
)
@click.option("--until", required=True, type=InstantType(), help="End (exclusive); no zone = UTC.")
@click.option(
    "--types",
    multiple=True,
    callback=_types,
    metavar="TYPE[,TYPE...]",
    help=f"Event types (default: all): {', '.join(sorted(EVENT_TYPES))}.",
)
@click.option("--out", required=True, callback=_out_path, help="Output file (JSON Lines).")
@click.option(
    "--gzip", "gzip_", is_flag=True, help="Compress (also implied by an OUT ending in .gz)."
)
@click.option("--state", default=None, help="State file (default: OUT.state).")
@duration_option(
    "--slice",
    "slice_seconds",
    min=1.0,
    said_default="the range cut into --concurrency even slices",
    help="Time slice streamed by one scroll (by default the fewest requests: every "
    "slice ends with a page that is not full).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 32),
    default=4,
    show_default=True,
    help="Slices streamed at once (they share the quota).",
)
@click.option(
    "--page-size",
    type=PageSizeType(events_page),
    default="max",
    show_default=True,
    help="Events per request: max (spec §8: 10,000) or a number.",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the plan and its cost; send nothing, write nothing."
)
@click.option(
    "--events-per-day",
    type=click.IntRange(0),
    default=None,
    help=f"Dry run: assumed volume (default {DEFAULT_EVENTS_PER_DAY:,}; the API cannot count).",
)
@_export_options
@pass_app
def backfill(
    app: App,
    since: datetime,
    until: datetime,
    types: list[str] | None,
    out: Path,
    gzip_: bool,
    state: str | None,
    slice_seconds: float | None,
    concurrency: int,
    page_size: int,
    dry_run: bool,
    events_per_day: int | None,
    wait: bool,
    max_wait: float | None,
    rate_store: str | None,
    pii: str | None,
    pii_key_file: str | None,
    fsync: bool,
) -> None:
    """Export every event of [SINCE, UNTIL) to OUT, exactly once, resumably.

    Progress is committed to the state file after every page: kill it, run the same
    command again, and it resumes. When the day's quota runs out it saves its progress,
    prints when the quota resets, and exits with 75 (or waits, with --wait).
    """
    if since >= until:
        raise click.UsageError(
            f"--since ({format_instant(since)}) must be before --until ({format_instant(until)})"
        )
    now = datetime.now(UTC)
    if since > now and not app.sim.enabled:  # the embedded simulator makes the range's data
        raise click.UsageError(
            f"--since ({format_instant(since)}) is in the future (now: "
            f"{format_instant(now, 'seconds')}): no event exists there yet"
        )
    if slice_seconds is None:
        slice_size = even_slice_size(since, until, concurrency)
    else:
        slice_size = timedelta(seconds=slice_seconds)
    try:
        slices = plan_slices(since, until, slice_size)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--slice'") from None
    policy = pii_policy(pii, pii_key_file)  # bad: one line, exit 78, nothing spent
    gzip = gzip_ or out.name.endswith(".gz")
    state_path = _state_for(out, state)
    params = events_params(
        out=out, since=since, until=until, types=types, slice_size=slice_size, gzip=gzip,
        pii=policy,
    )  # fmt: skip
    if dry_run:
        dry_run_plan(
            app, slices, params, state_path, events_per_day, page_size, concurrency, rate_store
        )
        return

    async def go() -> JobOutcome:
        async with app.client(
            since=since, until=until, on_exhausted="raise", rate_store=rate_store
        ) as api:
            await client_standing(api, shared=rate_store is not None)  # the run counts from it
            reporter = app.display.reporter(noun="events", quota=lambda: api.quota, clock=api.clock)
            job = events_backfill(
                api,
                since=since,
                until=until,
                out=out,
                state=state_path,
                types=types,
                slice_size=slice_size,
                gzip=gzip,
                concurrency=concurrency,
                page_size=page_size,
                reporter=reporter,
                wait=wait,
                max_wait=max_wait,
                fsync=fsync,
                pii=policy,
            )
            return await _run_job(app, job)

    with _exporting(app, params, state=state_path, out=out) as status:
        if status == "done":
            _already_done(app, state_path, "events", out)
            return
        outcome = _run_export(app, go, out=out, state=state_path, status=status)
    if outcome.status != "paused" and outcome.progress.records == 0:
        app.display.warning(
            "empty",
            f"no event at all from {format_instant(since)} to {format_instant(until)}: check "
            "the range (a simulator serves only the range its banner shows)",
        )
    _finish(app, outcome, "events", out)


# -- contacts --------------------------------------------------------------------------------


@click.group("contacts", cls=Group)
def contacts_group() -> None:
    """Contacts (customers) of the organization (spec §4.2)."""


@contacts_group.command("export")
@click.option("--out", required=True, callback=_out_path, help="Output file (JSON Lines).")
@click.option(
    "--gzip", "gzip_", is_flag=True, help="Compress (also implied by an OUT ending in .gz)."
)
@click.option("--state", default=None, help="State file (default: OUT.state).")
@click.option(
    "--has-email/--no-email",
    "has_email",
    default=None,
    help="Only contacts with (or without) an email (default: all).",
)
@click.option(
    "--page-size",
    type=PageSizeType(_contacts_page),
    default="max",
    show_default=True,
    help="Contacts per request: max (the largest the server accepts, up to 10,000; "
    "spec §4.2 shows 100) or a number.",
)
@_export_options
@pass_app
def export(
    app: App,
    out: Path,
    gzip_: bool,
    state: str | None,
    has_email: bool | None,
    page_size: PageSize,
    wait: bool,
    max_wait: float | None,
    rate_store: str | None,
    pii: str | None,
    pii_key_file: str | None,
    fsync: bool,
) -> None:
    """Export every contact to OUT, exactly once, resumably (same engine as backfill)."""
    policy = pii_policy(pii, pii_key_file)  # bad: one line, exit 78, nothing spent
    gzip = gzip_ or out.name.endswith(".gz")
    state_path = _state_for(out, state)
    params = contacts_params(out=out, gzip=gzip, has_email=has_email, pii=policy)

    async def go() -> JobOutcome:
        async with app.client(on_exhausted="raise", rate_store=rate_store) as api:
            standing = await client_standing(api, shared=rate_store is not None)
            contacts_plan(app.display, standing)
            reporter = app.display.reporter(
                noun="contacts", quota=lambda: api.quota, clock=api.clock
            )
            job = contacts_export(
                api,
                out=out,
                state=state_path,
                has_email=has_email,
                gzip=gzip,
                page_size=page_size,
                reporter=reporter,
                wait=wait,
                max_wait=max_wait,
                fsync=fsync,
                pii=policy,
            )
            return await _run_job(app, job)

    with _exporting(app, params, state=state_path, out=out) as status:
        if status == "done":
            _already_done(app, state_path, "contacts", out)
            return
        outcome = _run_export(app, go, out=out, state=state_path, status=status)
    _finish(app, outcome, "contacts", out)
