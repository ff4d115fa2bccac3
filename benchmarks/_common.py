"""Helpers shared by ``benchmarks/client.py`` and ``benchmarks/scroll.py`` (not a benchmark).

A simulator in its own process with the gateway's limit lifted, a client pointed at it with
the client's limit lifted too, the hand-written baseline's login, the machine's load, and a
child process whose peak RSS is its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

__all__ = [
    "CREDENTIALS",
    "hand_login",
    "load_line",
    "median",
    "open_client",
    "run_child",
    "simulator",
]

#: what a child needs of a running simulator
CREDENTIALS = ("base_url", "client_key", "client_secret", "organization")


def load_line() -> str:
    """The load average and core count: a busy machine explains noisy figures."""
    one, five, fifteen = os.getloadavg()
    return (
        f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores; "
        f"Python {sys.version.split()[0]}"
    )


def median(values: Sequence[float]) -> float:
    """The median (the figures reported are medians of repeated runs)."""
    return statistics.median(values)


@contextlib.contextmanager
def simulator(**options: Any) -> Iterator[dict[str, Any]]:
    """A simulator in a separate process, gateway limit off; yields its credentials."""
    from asyncwifi.testing import SimulatorProcess

    options.setdefault("rate_limit_mode", "off")
    options.setdefault("startup_timeout", 300)
    with SimulatorProcess(**options) as sim:
        yield {k: sim.info[k] for k in CREDENTIALS}


def open_client(info: dict[str, Any], **options: Any) -> Any:
    """An asyncwifi Client of the simulator ``info`` describes, with no client-side limit."""
    from asyncwifi import Client, Limits

    options.setdefault("limits", Limits(minute=None, day=None))
    return Client(
        info["client_key"],
        info["client_secret"],
        base_url=info["base_url"],
        organization=info["organization"],
        allow_http=True,
        **options,
    )


async def hand_login(session: Any, info: dict[str, Any]) -> dict[str, str]:
    """What a user writes by hand: log in once (spec §4.1), keep the Bearer header."""
    async with session.post(
        info["base_url"] + "/v1/sts/login/services",
        json={"clientKey": info["client_key"], "clientSecret": info["client_secret"]},
    ) as resp:
        resp.raise_for_status()
        token = json.loads(await resp.read())["token"]
    return {"Authorization": f"Bearer {token}", "Accept": "application/json"}


def run_child(args: Sequence[str]) -> dict[str, Any]:
    """Run ``python <args>`` and return the JSON line it prints, plus its own peak RSS.

    The peak comes from ``os.wait4`` (the child's ``ru_maxrss``, KiB on Linux), so each
    figure is one consumer's alone, not the parent's or a sibling's.
    """
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"child {args[1:3]} failed ({proc.returncode})")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    return result
