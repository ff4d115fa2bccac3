"""Webhook receiver throughput: accepted webhooks per second and p99 acknowledgement latency.

Runs the receiver (``asyncwifi.webhooks.serve``) in its own process pinned to one core, and
a load generator in a separate process (pinned to another core when there is one) that
keeps ``--connections`` keep-alive HTTP/1.1 connections busy on loopback, each sending the
next webhook as soon as the previous one is acknowledged. Every webhook has a new nonce
and a realistic ~1 KB sign-up body.

Modes compared side by side: memory (the handler runs before the 200), durable with
``synchronous=FULL`` (the default: each group commit is fsynced), durable with
``synchronous=NORMAL``, and durable FULL without group commit (one commit per event).
Targets (issue 8): 3,000/s in memory mode, 1,000/s durable.

    python benchmarks/webhooks.py                 # ~55 s
    python benchmarks/webhooks.py --seconds 10 --connections 64 --rounds 3

The "cpu us/ev" column is the server process's CPU time per event (all its threads): it
says what one core would sustain if nothing else ran on it, when the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SECRET = "bench-secret"
HEADER = "X-Webhook-Secret"

# -- the server process --------------------------------------------------------------------


def _pin(cpu: int) -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    cpus = sorted(os.sched_getaffinity(0))
    target = cpus[cpu % len(cpus)]
    os.sched_setaffinity(0, {target})
    return f"cpu {target}"


def _cpu() -> float:
    """CPU seconds used by this process, every thread (the spool's writer too)."""
    times = os.times()
    return times.user + times.system


def run_server(args: argparse.Namespace) -> None:
    from asyncwifi.webhooks import Receiver, Spool, serve

    _pin(args.cpu)
    receiver = Receiver(SECRET, header_name=HEADER)
    handled = 0

    @receiver.fallback
    async def count(payload: Any, context: Any) -> None:
        nonlocal handled
        handled += 1

    spool = None
    if args.mode != "memory":
        sync = "NORMAL" if args.mode == "durable-normal" else "FULL"
        # "durable-full-nogroup": one commit (one fsync) per event, to show what group
        # commit buys.
        batch = 1 if args.mode.endswith("nogroup") else 1024
        spool = Spool(Path(args.spool), synchronous=sync, max_batch=batch)  # type: ignore[arg-type]

    cpu_at_ready = 0.0

    def ready(port: int) -> None:
        nonlocal cpu_at_ready
        cpu_at_ready = _cpu()
        print(json.dumps({"port": port}), flush=True)

    async def main() -> None:
        task = asyncio.create_task(
            serve(receiver, host="127.0.0.1", port=0, spool=spool, on_ready=ready)
        )
        # The parent closes our stdin to stop us.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        print(json.dumps({"handled": handled, "cpu": _cpu() - cpu_at_ready}), flush=True)

    asyncio.run(main())


# -- the load generator process ------------------------------------------------------------

BODY_TEMPLATE = (
    '{"hotspot":{"id":"hs-0042"},"organization":{"id":"org-bench"},'
    '"location":{"id":"loc-7","country":"IT","address":"Via Roma 1, Pisa","extId":"store-7",'
    '"tags":["mall","north"]},'
    '"event":{"type":"signup","nonce":"%s","dwellTime":null,"timestamp":%d},'
    '"contact":{"id":"c-%s","birthday":"1990-04-01","country":"IT","firstname":"Ada",'
    '"lastname":"Lovelace","email":"ada@example.com","phone":"+390501234567",'
    '"civilStatus":"Mrs.","language":"it","personalid":null,"gender":"female",'
    '"created":"2024-03-01T10:00:00Z","marketing":true,"provider":"google",'
    '"ageVerification":true,"online":true,"type":"guest","username":"ada",'
    '"metrics":{"visitCount":12},"extraFields":{"extIds":{"id":"x1","prop1":"a","prop2":"b"}},'
    '"customFields":[{"key":"favourite","value":"tea"}],'
    '"optin":[{"date":"2024-03-01T10:00:00Z","name":"termsOfUse","accepted":true,"id":0,'
    '"type":"LEGACY","version":"default"},{"date":"2024-03-01T10:00:00Z","name":"privacy",'
    '"accepted":true,"id":0,"type":"LEGACY","version":"default"}]}}'
)


class _Conn(asyncio.Protocol):
    """One keep-alive connection sending webhooks back to back (a minimal HTTP/1.1 client)."""

    def __init__(self, run: _Load, ident: int) -> None:
        self.run = run
        self.ident = ident
        self.seq = 0
        self.buffer = bytearray()
        self.sent_at = 0.0
        self.transport: asyncio.Transport | None = None
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.send()

    def send(self) -> None:
        assert self.transport is not None
        self.seq += 1
        nonce = f"{self.run.tag}-{self.ident}-{self.seq}"
        body = (BODY_TEMPLATE % (nonce, int(time.time()), nonce)).encode()
        head = (
            f"POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\n{HEADER}: {SECRET}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.sent_at = time.perf_counter()
        self.transport.write(head + body)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            status = int(head.split(" ", 2)[1])
            del self.buffer[: end + 4 + length]
            self.run.record(status, time.perf_counter() - self.sent_at)
            if self.run.stopping:
                assert self.transport is not None
                self.transport.close()
                return
            self.send()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class _Load:
    def __init__(self, warmup: float) -> None:
        self.tag = f"{os.getpid()}-{time.time_ns()}"
        self.stopping = False
        self.measuring = False
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.started = 0.0

    def record(self, status: int, latency: float) -> None:
        if not self.measuring:
            return
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if 200 <= status < 300:
            self.latencies.append(latency)


def run_load(args: argparse.Namespace) -> None:
    pinned = _pin(args.cpu)

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        load = _Load(args.warmup)
        conns = []
        for i in range(args.connections):
            _, proto = await loop.create_connection(
                lambda i=i: _Conn(load, i), "127.0.0.1", args.port
            )
            conns.append(proto)
        await asyncio.sleep(args.warmup)
        load.measuring = True
        start = time.perf_counter()
        await asyncio.sleep(args.seconds)
        load.measuring = False
        elapsed = time.perf_counter() - start
        load.stopping = True
        await asyncio.wait_for(asyncio.gather(*(c.closed for c in conns)), 10)
        lat = sorted(load.latencies)
        return {
            "pinned": pinned,
            "accepted_per_s": len(lat) / elapsed,
            "p50_ms": 1000 * lat[len(lat) // 2] if lat else float("nan"),
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan"),
            "statuses": load.statuses,
        }

    print(json.dumps(asyncio.run(main())), flush=True)


# -- the orchestrator ----------------------------------------------------------------------


def _measure(mode: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    me = [sys.executable, str(Path(__file__).resolve())]
    spool = workdir / f"{mode}-{time.time_ns()}.sqlite3"
    server = subprocess.Popen(
        [*me, "--role", "server", "--mode", mode, "--spool", str(spool), "--cpu", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdin is not None
        port = json.loads(server.stdout.readline())["port"]
        load = subprocess.run(
            [
                *me,
                *("--role", "load", "--port", str(port), "--cpu", "1"),
                *("--seconds", str(args.seconds), "--warmup", str(args.warmup)),
                *("--connections", str(args.connections)),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        result: dict[str, Any] = json.loads(load.stdout.strip().splitlines()[-1])
        server.stdin.close()
        tail = server.stdout.read().strip().splitlines()
        final = json.loads(tail[-1])
        # CPU per event (warm-up included, idle costs ~nothing): what one core would sustain
        # if nothing else ran on it, whatever else the machine was doing meanwhile.
        result["cpu_us_per_event"] = 1e6 * final["cpu"] / max(1, final["handled"])
        return result
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(30)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["bench", "server", "load"], default="bench")
    parser.add_argument("--mode", default="memory")
    parser.add_argument(
        "--modes", default="memory,durable-full,durable-normal,durable-full-nogroup"
    )
    parser.add_argument("--spool", default="")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--warmup", type=float, default=1.5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="runs per mode (median kept)")
    args = parser.parse_args()
    if args.role == "server":
        run_server(args)
        return
    if args.role == "load":
        run_load(args)
        return

    targets = {"memory": 3000.0}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"webhook receiver: server pinned to one core, load generator in another process "
        f"({cores} cores visible), {args.connections} keep-alive connections, "
        f"{args.seconds:g} s per run after {args.warmup:g} s warm-up, "
        f"median of {args.rounds} round(s); load average before: {_load()}"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="asyncwifi-bench-") as tmp:
        for mode in args.modes.split(","):
            runs = [_measure(mode, args, Path(tmp)) for _ in range(args.rounds)]
            rate = statistics.median(r["accepted_per_s"] for r in runs)
            p50 = statistics.median(r["p50_ms"] for r in runs)
            p99 = statistics.median(r["p99_ms"] for r in runs)
            cpu = statistics.median(r["cpu_us_per_event"] for r in runs)
            statuses = runs[-1]["statuses"]
            rows.append((mode, rate, p50, p99, targets.get(mode, 1000.0), cpu, statuses))
    base = rows[0][1] if rows else 1.0
    print()
    print(
        f"{'mode':<22}{'accepted/s':>12}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'target/s':>10}{'x target':>10}{'x ' + rows[0][0]:>10}"
        f"{'cpu us/ev':>11}{'1-core cap/s':>14}  statuses"
    )
    for mode, rate, p50, p99, target, cpu, statuses in rows:
        print(
            f"{mode:<22}{rate:>12,.0f}{p50:>9.2f}{p99:>9.2f}{target:>10,.0f}"
            f"{rate / target:>10.2f}{rate / base:>10.2f}{cpu:>11.0f}{1e6 / cpu:>14,.0f}"
            f"  {statuses}"
        )


if __name__ == "__main__":
    main()
