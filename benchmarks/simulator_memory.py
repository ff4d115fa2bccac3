"""Simulator memory benchmark: the embedded ``--simulate`` mode and a big simulator, before /
after in one run (issue 43).

* **``asyncwifi --simulate sync``** over most of a year (``--since 2026-01-02``, the
  README's embedded mode: 10,000 events a day, about 3.3 million): the command runs for
  ``--seconds`` (it is a daemon), is stopped with SIGINT, and reports its peak RSS
  (``os.wait4``), the rows it stored and how long it took to stop.
* **a simulator serving N events** (``--events``, 20,000,000 by default, over the default
  30 days; ``--before-events`` for the before side, 1,000,000 by default: the old simulator
  kept about 0.5 KB an event): one process holding the simulator and a client reading
  from it, rate limit off: 40 five-minute windows spread over the range, a scroll of 200,000
  events from the middle in UTC order, 50,000 logins, 20,000 in business-time order; its
  peak RSS (the client's pages included: about 10 MB a page).

``--before REF`` runs the same from a temporary ``git worktree`` of REF. Run: ``python
benchmarks/simulator_memory.py --before main`` (about five minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import Checkout, checkouts, load_line

_CLI = "from asyncwifi.cli import main; main()"


def _env(checkout: Checkout, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASYNCWIFI_", "PYTHON"))}
    env.update(PYTHONPATH=str(checkout.root), XDG_CONFIG_HOME=str(workdir))
    return env


def _running(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child still runs, without reaping it (``wait4`` reads its usage)."""
    found = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return found is None


def _wait(proc: subprocess.Popen[bytes], seconds: float) -> dict[str, Any]:
    began = time.perf_counter()
    while time.perf_counter() - began < seconds and _running(proc):
        time.sleep(0.2)
    stopped = time.perf_counter()
    if _running(proc):
        proc.send_signal(signal.SIGINT)
    _, status, usage = os.wait4(proc.pid, 0)
    return {
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "stop_s": time.perf_counter() - stopped,
        "status": os.waitstatus_to_exitcode(status),
    }


def simulate_sync(checkout: Checkout, workdir: Path, seconds: float) -> dict[str, Any]:
    """``asyncwifi --simulate sync`` over most of a year, for ``seconds``."""
    db = workdir / f"sync-{time.monotonic_ns()}.db"
    argv = ["--simulate", "sync", "--to", f"sqlite:///{db}", "--since", "2026-01-02"]
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLI, *argv],
        cwd=workdir,
        env=_env(checkout, workdir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    result = _wait(proc, seconds)
    with sqlite3.connect(db) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        table = next((n for n in names if n.endswith("events")), None)
        result["rows"] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] if table else 0
    return result


async def _serve_and_read(events: int) -> None:
    """The child: a simulator of ``events`` and a client reading from it, one process."""
    from asyncwifi import Limits
    from asyncwifi.testing import Simulator

    start = datetime(2024, 1, 1, tzinfo=UTC)
    async with (
        Simulator(events=events, rate_limit_mode="off") as sim,
        sim.client(limits=Limits(minute=None, day=None)) as api,
    ):
        seen = 0
        for k in range(40):
            at = start + timedelta(days=30 * k / 40)
            window = api.events.list(date_start=at, date_end=at + timedelta(minutes=5))
            seen += sum([1 async for _ in window])
        middle = start + timedelta(days=15)
        reads: list[tuple[dict[str, Any], int]] = [
            ({}, 200_000),
            ({"types": ["login"]}, 50_000),
            ({"sort_by": "businessTime", "size": 10_000}, 20_000),
        ]
        for options, count in reads:
            n = 0
            async with api.events.list(date_start=middle, **options) as stream:
                async for _ in stream:
                    n += 1
                    if n == count:
                        break
            seen += n
        print(seen, flush=True)


def serve(checkout: Checkout, workdir: Path, events: int) -> dict[str, Any]:
    """A simulator of ``events`` read from, in a child importing ``checkout``."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", str(events)],
        cwd=workdir,
        env=_env(checkout, workdir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    began = time.perf_counter()
    assert proc.stdout is not None
    read = proc.stdout.read().decode().strip()
    result = _wait(proc, 0.0)
    result["seconds"] = time.perf_counter() - began
    result["read"] = int(read) if read.isdigit() else 0
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REF", help="also run from this git commit")
    parser.add_argument("--seconds", type=float, default=150.0, help="the sync's run")
    parser.add_argument("--events", type=int, default=20_000_000, help="the big simulator")
    parser.add_argument("--before-events", type=int, default=1_000_000, help="before's size")
    parser.add_argument("--only", choices=("sync", "serve"), help="run one part only")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        asyncio.run(_serve_and_read(args.child))
        return
    print(load_line(), flush=True)
    with (
        checkouts(args.before) as trees,
        tempfile.TemporaryDirectory(prefix="asyncwifi-bench-", dir=".") as tmp,
    ):
        workdir = Path(tmp).resolve()
        print(f"{'':44} {'peak RSS':>10} {'CPU s':>8} {'rows/read':>12} {'stop s':>7}")
        for tree in trees if args.only != "serve" else []:
            r = simulate_sync(tree, workdir, args.seconds)
            print(
                f"{'--simulate sync, ' + tree.label:44} {r['peak_rss_mb']:7.0f} MB "
                f"{r['cpu_s']:8.1f} {r['rows']:12,} {r['stop_s']:7.2f}",
                flush=True,
            )
        for tree in trees if args.only != "sync" else []:
            sizes = [args.events] if tree is trees[0] else []
            sizes += [args.before_events]
            for events in sizes:
                r = serve(tree, workdir, events)
                label = f"simulator {events:,} events, {tree.label}"
                print(
                    f"{label:44} {r['peak_rss_mb']:7.0f} MB {r['cpu_s']:8.1f} {r['read']:12,}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
