"""Fixtures for the command's tests: a clean environment and an in-process runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncwifi.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No credentials anywhere: no ASYNCWIFI_* variables, an empty config directory."""
    import os

    for name in list(os.environ):
        if name.startswith("ASYNCWIFI_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run ``asyncwifi ARGS`` in this process; returns the status, stdout and stderr."""

    def invoke(*args: str) -> Result:
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(int(code), captured.out, captured.err)

    return invoke


# -- the real command, in a child process (the careless suites) --------------------------


def asyncwifi_command() -> list[str]:
    """The installed ``asyncwifi`` console script (else the module), as a user runs it."""
    import sys

    script = Path(sys.executable).with_name("asyncwifi")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from asyncwifi.cli import main; sys.exit(main())"]


def run_command(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    quiet: bool = True,
    argv0: list[str] | None = None,
) -> Result:
    """``asyncwifi ARGS`` as a child process (``-q`` first unless ``quiet=False``;
    ``argv0``: what runs instead of the console script)."""
    import os
    import subprocess

    proc = subprocess.run(
        [*(argv0 or asyncwifi_command()), *(["-q"] if quiet else []), *args],
        env=dict(os.environ if env is None else env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def one_clean_line(result: Result, code: int, *named: str) -> str:
    """The result is exit ``code``, one ``asyncwifi: error:`` line on stderr naming each of
    ``named``, and no traceback; returns the line."""
    assert "Traceback" not in result.err + result.out, result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("asyncwifi: error: "), lines[0]
    assert result.code == code, (result.code, result.err)
    for text in named:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def run_without(packages: tuple[str, ...], *args: str, timeout: float = 60.0) -> Result:
    """``asyncwifi -q ARGS`` in a child process where ``packages`` are not installed (as
    after the README's ``pip install -e ".[cli]"``, which has no optional extra)."""
    import sys

    script = (
        "import sys\n"
        f"for name in {packages!r}:\n"
        "    sys.modules[name] = None  # import fails, find_spec finds nothing\n"
        "from asyncwifi.cli import main\n"
        "main()\n"
    )
    return run_command(*args, timeout=timeout, argv0=[sys.executable, "-c", script])


async def run_against(
    base_url: str, sim: Any, home: Path, *args: str, more_env: dict[str, str] | None = None
) -> Result:
    """``asyncwifi ARGS`` in a child process whose credentials are ``sim``'s and whose base
    URL is ``base_url`` (a proxy that misbehaves), while this loop serves both
    (``more_env``: more variables, ``ASYNCWIFI_TIMEOUT`` say)."""
    import asyncio
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCWIFI_")}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "ASYNCWIFI_BASE_URL": base_url,
        "ASYNCWIFI_CLIENT_KEY": sim.client_key,
        "ASYNCWIFI_CLIENT_SECRET": sim.client_secret,
        "ASYNCWIFI_ORGANIZATION": sim.organization,
        "ASYNCWIFI_ALLOW_HTTP": "1",
        **(more_env or {}),
    }
    proc = await asyncio.create_subprocess_exec(
        *asyncwifi_command(), "-q", *args, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return Result(proc.returncode, out.decode(), err.decode())
