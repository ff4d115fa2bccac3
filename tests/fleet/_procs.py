"""Fleet workers as real processes (``python -m asyncwifi fleet worker``), so that tests can
kill (SIGKILL), stop (SIGSTOP) and resume them; their fleet.toml; what the database says.

A worker shares the test's scaled time line with the in-process simulator through the
command's hidden ``--clock`` (``AnchoredClock.describe``), and each key's limits through
Redis (``--rate-store``), as workers on many machines do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from asyncwifi._clock import Clock
from asyncwifi.testing import Simulator
from asyncwifi.testing._fleet_toml import fleet_toml
from asyncwifi.testing._process import AnchoredClock

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
    n: int,
    config: Path,
    url: str,
    target: str,
    task_queue: str,
    clock: Clock,
    logs: Path,
    *options: str,
) -> Iterator[list[WorkerProcess]]:
    """``n`` workers, stopped at the end (whatever state the test left them in)."""
    procs: list[WorkerProcess] = []
    try:
        for i in range(n):
            log = logs / f"worker-{i}.log"
            procs.append(WorkerProcess(config, url, target, task_queue, clock, log, *options))
        yield procs
    finally:
        for proc in procs:
            proc.stop()


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
