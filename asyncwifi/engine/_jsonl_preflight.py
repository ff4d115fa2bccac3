"""Preflight: everything a JSON Lines destination checks before it creates or changes a
file (``JsonlDestination.preflight``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from asyncwifi.engine._destination import DestinationNotWritableError, StateMismatchError
from asyncwifi.engine._jsonl_params import JobParams, check_readable, read_state, state_exists

__all__ = ["preflight"]


def _check_writable(path: Path, what: str) -> None:
    if path.exists():
        if path.is_dir():
            raise DestinationNotWritableError(f"{what} {path} is a directory")
        if not os.access(path, os.W_OK):
            raise DestinationNotWritableError(f"{what} {path} is not writable")
        return
    parent = path.parent
    if not parent.is_dir():
        raise DestinationNotWritableError(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DestinationNotWritableError(f"{what} {path}: directory {parent} is not writable")


def preflight(
    params: JobParams, *, state_path: Path, out_path: Path
) -> Literal["new", "resume", "done"]:
    """Check that the job can start, without creating or changing any file.

    Raises :class:`DestinationNotWritableError`, or :class:`StateMismatchError`: a state file
    SQLite cannot read, or made for other options; an output that exists without a state
    file, or is shorter than its state says.
    """
    if state_path.resolve() == out_path.resolve():
        raise StateMismatchError("the state file and the output must be different files")
    _check_writable(out_path, "output")
    _check_writable(state_path, "state file")
    check_readable(state_path)
    if not state_exists(state_path):
        if out_path.exists() and out_path.stat().st_size > 0:
            raise StateMismatchError(
                f"{out_path} already exists and has no state file ({state_path}); "
                "move it away, or pass the --state it was written with"
            )
        return "new"
    info = read_state(state_path)
    if info.params != params:
        raise StateMismatchError(
            f"state file {state_path} belongs to another job ({info.diff(params)}); "
            "use the same options, or another --state"
        )
    size = out_path.stat().st_size if out_path.exists() else 0
    if size < info.offset:
        raise StateMismatchError(
            f"{out_path} is {size} bytes but the state says {info.offset} were written: "
            "the output was truncated or replaced; restore it or start a new job"
        )
    return "done" if info.done else "resume"
