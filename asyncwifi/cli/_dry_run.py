"""``events backfill --dry-run``: the plan and its cost, printed; nothing sent, nothing written.

The events API has no count, so the volume is an assumption (``--events-per-day``, the
simulator's volume under ``--simulate``, else :data:`DEFAULT_EVENTS_PER_DAY`), said so.
Its objects (spec §8: each event read once) are set against what is left of the month's
allowance (``--allowance``), the month-to-date count read from the limiter's shared store
(``--rate-store``; reading it is not a request); more than is left is a warning.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from asyncwifi._instant import human_duration
from asyncwifi.backfill import Slice, estimate
from asyncwifi.cli._app import App, run_async
from asyncwifi.cli._objects import Standing, month_standing
from asyncwifi.cli._simulate import simulated_clock
from asyncwifi.cli._words import counted
from asyncwifi.engine import JobParams, JsonlDestination
from asyncwifi.ratelimit import Limit, Limits

__all__ = ["DEFAULT_EVENTS_PER_DAY", "dry_run_plan"]

#: the dry run's default assumption of event volume (the API has no count endpoint)
DEFAULT_EVENTS_PER_DAY = 10_000


def dry_run_plan(
    app: App,
    slices: list[Slice],
    params: JobParams,
    state_path: Path,
    events_per_day: int | None,
    page_size: int,
    concurrency: int,
    rate_store: str | None = None,
) -> None:
    """Print the plan: zero requests, zero files."""
    sim = app.sim
    assumed = events_per_day
    source = "--events-per-day"
    if assumed is None:
        assumed = sim.events_per_day if sim.enabled else DEFAULT_EVENTS_PER_DAY
        source = "the simulator's volume" if sim.enabled else "default"
    limits = Limits()  # the documented ones: written there once
    if sim.enabled:  # the embedded simulator's own
        limits = Limits(minute=Limit(sim.minute_limit, 60.0), day=Limit(sim.day_limit, 86_400.0))
    minute_count = limits.minute.count if limits.minute else 0
    day_count = limits.day.count if limits.day else 0
    plan = estimate(
        slices,
        events_per_day=assumed,
        page_size=page_size,
        limits=limits,
    )
    done_note = None
    if JsonlDestination.exists(state_path):
        info = JsonlDestination.read_only(state_path)
        done_note = (
            f"{info.slices_done}/{info.slices_total} slices done, {info.records:,} events "
            f"written (the estimate is for the whole job)"
        )
    standing = run_async(_standing(app, rate_store))
    excess = standing.excess(plan.objects, "events")
    size = slices[0].end - slices[0].start
    summary = {
        "since": slices[0].date_start,
        "until_inclusive": slices[-1].date_end,
        "types": list(params.types) if params.types else "all",
        "slices": len(slices),
        "slice": human_duration(size.total_seconds()),
        "concurrency": concurrency,
        "assumed_events_per_day": assumed,
        "assumption_source": source,
        "estimated_events": plan.events,
        "estimated_requests": plan.requests,
        "estimated_objects": plan.objects,
        **standing.fields("events"),
        "objects_warning": excess,
        "page_requests": plan.page_requests,
        "logins": plan.logins,
        "seconds_at_rate_limit": plan.seconds_at_rate,
        "days_of_quota": plan.days_of_quota,
        "seconds_total": plan.seconds_total,
        "requests_spent_by_dry_run": 0,
        "state": done_note,
    }
    if app.display.log_format == "json":
        click.echo(json.dumps(summary))
        if excess:
            app.display.warning("objects", excess, objects=plan.objects)
        return
    lines = [
        f"plan: events from {slices[0].date_start} to {slices[-1].date_end} (inclusive), "
        f"types: {', '.join(params.types) if params.types else 'all'}",
        f"slices: {len(slices)} of {human_duration(size.total_seconds())}, {concurrency} at a time",
    ]
    shown = slices if len(slices) <= 8 else [*slices[:5], None, *slices[-2:]]
    for piece in shown:
        if piece is None:
            lines.append(f"  ... {len(slices) - 7} more")
        else:
            lines.append(f"  #{piece.index:<4} {piece.date_start} .. {piece.date_end}")
    data_pages = plan.page_requests - plan.slices
    lines += [
        f"assumption: {assumed:,} events per day ({source}); the events API has no count, "
        "so a dry run sends no request to learn it",
        f"estimate: {plan.events:,} events = {data_pages:,} full pages of {page_size:,} + "
        f"{plan.slices:,} last pages (one ends each slice, short or empty) + "
        f"{counted(plan.logins, 'login')} = "
        f"{plan.requests:,} requests",
        f"objects: {plan.objects:,} (the events, each read once; a closing empty page "
        f"costs 0); {standing.describe('events')}",
        f"time at the rate limit ({minute_count}/min): {human_duration(plan.seconds_at_rate)}",
        f"quota: {plan.days_of_quota:.2f} days of the {day_count:,}-request daily quota "
        f"({counted(math.ceil(plan.days_of_quota) or 1, 'day')}); finishes in about "
        f"{human_duration(plan.seconds_total)} counting the daily resets",
    ]
    if done_note:
        lines.append(f"state {state_path}: {done_note}")
    lines.append("this dry run sent 0 requests and wrote nothing")
    click.echo("\n".join(lines))
    if excess:
        app.display.warning("objects", excess)


async def _standing(app: App, rate_store: str | None) -> Standing:
    """The month's objects against ``--allowance``: the count read from the shared store
    (named by the key: the simulator's under ``--simulate``, else the configured one)."""
    key, clock = None, None
    if app.sim.enabled:
        from asyncwifi.testing import Simulator

        clock = simulated_clock(app.sim)
        key = Simulator(seed=app.sim.seed, events=0).client_key if rate_store else None
    elif rate_store is not None:
        key = app.settings().client_key
    return await month_standing(app.allowance, rate_store=rate_store, client_key=key, clock=clock)
