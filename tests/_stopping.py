"""An ``asyncwifi`` command in a child process, brought into a wait and stopped by a signal.

The test reads the child's stderr line by line until the command says it is in the wait
(no real-time guess), sends SIGTERM or SIGINT, and measures how long the child takes to
exit. Async, so that the test's own loop can serve a simulator or a proxy meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from asyncwifi.testing import Simulator

__all__ = ["STOP_WITHIN", "Child", "Stopped", "pointed_at"]

#: how soon a stopped command must have exited (real seconds, a loaded 2-core machine)
STOP_WITHIN = 5.0
#: how long a command may take to reach the wait (it returns as soon as it does)
REACH_WITHIN = 90.0


class Stopped:
    """How a child ended after its signal: status, real seconds it took, its stderr."""

    def __init__(self, code: int, seconds: float, err: str) -> None:
        self.code = code
        self.seconds = seconds
        self.err = err

    def __repr__(self) -> str:
        return f"Stopped(code={self.code}, seconds={self.seconds:.2f})"


class Child:
    """``asyncwifi ARGS`` as a child process (stdout discarded, stderr read as it comes)."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self.args = list(args)
        self.env = dict(os.environ if env is None else env, PYTHONPATH=os.getcwd())
        self.proc: asyncio.subprocess.Process | None = None
        self.lines: list[str] = []

    async def __aenter__(self) -> Child:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "from asyncwifi.cli import main; main()",
            *self.args,
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.communicate()

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    async def reach(self, text: str, timeout: float = REACH_WITHIN) -> None:
        """Read stderr until a line holds ``text`` (fail if the child ends first)."""
        assert self.proc is not None
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"{text!r} not said within {timeout} s; stderr:\n{self.stderr}")
            try:
                raw = await asyncio.wait_for(self.proc.stderr.readline(), left)
            except TimeoutError:
                continue
            if not raw:
                await self.proc.wait()
                pytest.fail(
                    f"exited ({self.proc.returncode}) before saying {text!r}:\n{self.stderr}"
                )
            line = raw.decode(errors="replace")
            self.lines.append(line)
            if text in line:
                return

    async def stop(self, signum: int) -> Stopped:
        """Send ``signum``; wait for the exit (killed after ``STOP_WITHIN`` and more)."""
        proc = self.proc
        assert proc is not None
        assert proc.stderr is not None
        started = time.monotonic()
        proc.send_signal(signum)
        try:
            rest = await asyncio.wait_for(proc.stderr.read(), STOP_WITHIN * 4)
            await asyncio.wait_for(proc.wait(), STOP_WITHIN * 4)
        except TimeoutError:
            proc.kill()
            rest = await proc.stderr.read()
            await proc.wait()
        seconds = time.monotonic() - started
        self.lines.append(rest.decode(errors="replace"))
        assert proc.returncode is not None
        return Stopped(proc.returncode, seconds, self.stderr)


def pointed_at(sim: Simulator, home: Path) -> dict[str, str]:
    """This environment, its ``ASYNCWIFI_*`` replaced by ``sim``'s credentials (and no
    configuration file: ``home`` is an empty directory)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCWIFI_")}
    return env | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "ASYNCWIFI_BASE_URL": sim.base_url,
        "ASYNCWIFI_CLIENT_KEY": sim.client_key,
        "ASYNCWIFI_CLIENT_SECRET": sim.client_secret,
        "ASYNCWIFI_ORGANIZATION": sim.organization,
        "ASYNCWIFI_ALLOW_HTTP": "1",
    }
