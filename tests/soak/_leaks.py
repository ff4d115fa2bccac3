"""Leak checks shared by the fault soaks: sockets, tasks and aiohttp's unclosed warnings."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def open_sockets() -> int:
    """How many sockets this process holds open (Linux: /proc/self/fd)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            continue  # closed meanwhile (the listing's own fd)
    return n


def scroll_tasks() -> list[asyncio.Task[object]]:
    """Background scroll tasks still alive."""
    return [
        t
        for t in asyncio.all_tasks()
        if t.get_name().startswith("asyncwifi-scroll") and not t.done()
    ]


@contextmanager
def no_leaks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fails when the block leaves a socket, a task, or an "Unclosed ..." report behind.

    aiohttp reports an unclosed session/connector/response through the event loop's
    exception handler (the ``asyncio`` logger) and a ResourceWarning, which this suite's
    ``filterwarnings = error`` already turns into a failure.
    """
    caplog.set_level(logging.ERROR, logger="asyncio")
    before = open_sockets()
    tasks_before = set(asyncio.all_tasks())
    yield
    gc.collect()
    assert not scroll_tasks()
    left = {t for t in asyncio.all_tasks() - tasks_before if not t.done()}
    left.discard(asyncio.current_task())  # type: ignore[arg-type]
    assert not left, f"tasks left running: {left}"
    assert open_sockets() <= before, "a socket was left open"
    unclosed = [r.getMessage() for r in caplog.records if "nclosed" in r.getMessage()]
    assert not unclosed, unclosed
