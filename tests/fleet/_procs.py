"""Fleet workers as real processes (``python -m asyncwifi fleet worker``), so that tests can
kill (SIGKILL), stop (SIGSTOP) and resume them; their fleet.toml; what the database says.

A worker shares the test's scaled time line with the in-process simulator through the
command's hidden ``--clock`` (``AnchoredClock.describe``), and each key's limits through
Redis (``--rate-store``), as workers on many machines do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from asyncwifi._clock import Clock
from asyncwifi.testing import Simulator
from asyncwifi.testing._fleet_toml import fleet_toml
from asyncwifi.testing._process import AnchoredClock
from tests._proxy import CuttableProxy

REDIS = "redis://127.0.0.1:6379/0"
#: the ``asyncwifi`` command (the package has no ``__main__``)
MAIN = "from asyncwifi.cli import main; main()"


def write_config(path: Path, sim: Simulator, **fleet: Any) -> Path:
    """A fleet.toml of the simulator's organizations, with ``fleet`` in its ``[fleet]``."""
    settings = {"since": "2024-01-01", "poll": 3600, **fleet}
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    text = fleet_toml(sim.base_url, sim.organizations)  # type: ignore[attr-defined]
    path.write_text(text.replace("allow_http = true\n", "allow_http = true\n" + extra, 1))
    path.chmod(0o600)
    return path


class WorkerProcess:
    """One ``asyncwifi fleet worker`` child; its stderr goes to ``log`` (read with
    :meth:`output`)."""

    def __init__(
        self,
        config: Path,
        url: str,
        target: str,
        task_queue: str,
        clock: Clock,
        log: Path,
        *options: str,
    ) -> None:
        self.log = log
        speed, start, anchor = AnchoredClock.describe(clock)
        argv = [sys.executable, "-c", MAIN, "fleet", "worker", "--config", str(config),
                "--to", url, "--temporal", target, "--task-queue", task_queue,
                "--rate-store", REDIS, "--clock", str(speed), repr(start), repr(anchor),
                *options]  # fmt: skip
        with log.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def check(self) -> None:
        """Fail, showing its log, if it ended (it was meant to run)."""
        code = self.proc.poll()
        assert code is None, f"worker {self.pid} exited {code}:\n{self.output()[-3000:]}"

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def stop(self, seconds: float = 15.0) -> int:
        """SIGTERM (a graceful stop; SIGCONT first, should it be stopped), then SIGKILL if
        it outlives ``seconds``; its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                return self.proc.wait(seconds)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


@contextmanager
def worker_processes(
    urls: Sequence[str],
    config: Path,
    target: str,
    task_queue: str,
    clock: Clock,
    logs: Path,
    *options: str,
) -> Iterator[list[WorkerProcess]]:
    """A worker per database URL, stopped at the end (whatever state the test left them
    in)."""
    procs: list[WorkerProcess] = []
    try:
        for i, url in enumerate(urls):
            log = logs / f"worker-{i}.log"
            procs.append(WorkerProcess(config, url, target, task_queue, clock, log, *options))
        yield procs
    finally:
        for proc in procs:  # the test checked what it meant to: no graceful stop to wait for
            proc.proc.kill()
            proc.proc.wait()


async def lease_holders(url: str) -> dict[str, str]:
    """Who holds each organization's lease (the worker's identity, ``host:pid``)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT organization_id, holder FROM sync_leases")
    except asyncpg.UndefinedTableError:
        return {}
    finally:
        await conn.close()
    return {row["organization_id"]: row["holder"] for row in rows}


def holder_pid(holder: str) -> int:
    """The process id in a lease holder's name (``host:pid workflow attempt n``)."""
    return int(holder.split()[0].rsplit(":", 1)[1])


class HoldingProxy(CuttableProxy):
    """A TCP proxy (to PostgreSQL) that can hold what goes towards the server: ``hold()``
    keeps every byte sent from then on (counted in ``held``) until ``release()``; a write
    begun meanwhile waits, not one statement of it reaching the server."""

    def __init__(self, target: int) -> None:
        super().__init__(target)
        self.held = 0
        self._flowing = asyncio.Event()
        self._flowing.set()

    def hold(self) -> None:
        self.held = 0
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    async def _pipe(
        self, r: asyncio.StreamReader, w: asyncio.StreamWriter, upstream: bool = False
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await r.read(65536):
                if upstream and not self._flowing.is_set():
                    self.held += len(data)
                    await self._flowing.wait()
                w.write(data)
                await w.drain()
        w.close()


def through(url: str, port: int) -> str:
    """``url`` with its port replaced by ``port`` (a proxy's)."""
    head, _, tail = url.rpartition(":")
    return f"{head}:{port}/{tail.split('/', 1)[1]}"
