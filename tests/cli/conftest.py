"""Fixtures for the command's tests: a clean environment and an in-process runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
