"""Ctrl-C and SIGTERM at any moment of start-up, sent to the real console script (issue 40).

The command takes half a second or more to load (the SDK, aiohttp, click, rich), then
builds a simulator, logs in, opens its files: a stop anywhere in there was a 6-32-line
``KeyboardInterrupt`` traceback (exit -2), a silent death (SIGTERM, exit -15), or, for a
sync, a Ctrl-C lost until the second one. Now each ends within seconds in one line and the
documented status (docs/guides/cli.md): 130 and ``asyncwifi: error: interrupted``, or 0 for a
sync stopped once it is getting ready. Moments are counted from when the console script's
first module is loaded (``PYTHONPROFILEIMPORTTIME`` says when), so that a busy machine only
moves where each moment falls, never whether the script can take the signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from asyncwifi.cli import ExitCode
from tests._stopping import REACH_WITHIN, STOP_WITHIN

ROOT = Path(__file__).resolve().parents[2]
#: seconds after the console script's own module is loaded (its handlers are in place)
MOMENTS = (0.0, 0.05, 0.2, 0.5, 1.0)
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}
#: an export that lasts (small pages, a slow clock): still running at every moment
BACKFILL = ["--sim-speed", "10", "--simulate", "events", "backfill", "--since", "2026-01-01",
            "--until", "2026-01-08", "--page-size", "100", "--out", "events.jsonl"]  # fmt: skip
#: a daemon: a stop it lost would leave it running
SYNC = ["--simulate", "sync", "--to", "sqlite:///wifi.db", "--since", "2026-01-01",
        "--until", "2026-01-08"]  # fmt: skip


def console_script() -> tuple[list[str], str]:
    """What runs ``asyncwifi`` (pip's script for pyproject.toml's entry point), and the
    module it imports first."""
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = entry["asyncwifi"].split(":")
    script = Path(sys.executable).with_name("asyncwifi")
    if script.exists() and f"from {module} import {function}" in script.read_text():
        return [str(script)], module
    # a virtualenv installed before the entry point changed: the script's own two lines
    code = f"import sys; from {module} import {function}; sys.exit({function}())"
    return [sys.executable, "-c", code], module


@dataclass
class Stop:
    code: int | None
    seconds: float
    lines: list[str]

    @property
    def text(self) -> str:
        return "".join(self.lines)


async def stop_at(args: list[str], signum: int, moment: float, home: Path) -> Stop:
    """Start ``asyncwifi -q ARGS`` in ``home``, send ``signum`` ``moment`` seconds after its
    first module is loaded, and wait for the end (killed if it outlives the signal by
    much): its status, how long after the signal, its stderr lines."""
    command, first = console_script()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCWIFI_")}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONPROFILEIMPORTTIME": "1"}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *command, "-q", *args, cwd=home, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    lines: list[str] = []
    loaded = asyncio.Event()

    async def read(stream: asyncio.StreamReader) -> None:
        async for raw in stream:  # read all along: a full pipe would stall the child
            line = raw.decode(errors="replace")
            if not line.startswith("import time:"):
                lines.append(line)
            elif line.rstrip().endswith(f"| {first}"):
                loaded.set()
        loaded.set()

    reader = asyncio.create_task(read(proc.stderr))
    try:
        await asyncio.wait_for(loaded.wait(), REACH_WITHIN)
        await asyncio.sleep(moment)
        sent = time.monotonic()
        if proc.returncode is None:
            proc.send_signal(signum)
        with contextlib.suppress(TimeoutError):  # killed below, its status then says so
            await asyncio.wait_for(proc.wait(), STOP_WITHIN * 4)
        seconds = time.monotonic() - sent
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await reader
    return Stop(proc.returncode, seconds, [line for line in lines if line.strip()])


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("name", SIGNALS)
async def test_a_stop_while_a_backfill_starts_is_one_line_and_130(
    tmp_path: Path, name: str, moment: float
) -> None:
    stop = await stop_at(BACKFILL, SIGNALS[name], moment, tmp_path)
    assert "Traceback" not in stop.text, stop.text
    assert stop.code == ExitCode.INTERRUPTED, (stop.code, stop.text)
    assert len(stop.lines) == 1, stop.text
    assert stop.lines[0].startswith("asyncwifi: error: interrupted"), stop.text
    assert stop.seconds < STOP_WITHIN, stop.seconds
    # stopped before its first commit, a new job leaves no file behind; after it, the
    # output has its state (run the same command again to resume)
    out = tmp_path / "events.jsonl"
    assert not out.exists() or out.with_name("events.jsonl.state").exists()


@pytest.mark.parametrize("moment", [0.1, *MOMENTS[2:]])
@pytest.mark.parametrize("name", SIGNALS)
async def test_a_stop_while_a_sync_starts_ends_it(tmp_path: Path, name: str, moment: float) -> None:
    """A Ctrl-C 0.1 s after ``asyncwifi --simulate sync`` started was lost: the sync ran on
    until a second one. Stopped while the command loads: 130 and the line; once the sync
    gets ready: 0 (a stop is how a sync ends), with no error line."""
    stop = await stop_at(SYNC, SIGNALS[name], moment, tmp_path)
    assert "Traceback" not in stop.text, stop.text
    assert stop.seconds < STOP_WITHIN, (stop.seconds, stop.text)
    errors = [line for line in stop.lines if "error:" in line]
    if stop.code == ExitCode.INTERRUPTED:
        assert errors == ["asyncwifi: error: interrupted\n"], stop.text
    else:
        assert stop.code == ExitCode.OK, (stop.code, stop.text)
        assert errors == [], stop.text
