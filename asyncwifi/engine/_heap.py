"""Page bodies handed back to the OS when freed (glibc): a copy's memory stays what the pages in
flight need, not what the heap once peaked at.

A page body is one buffer of a few MB. glibc serves a buffer that large with ``mmap`` and
returns it on free, but after the first such free it raises its ``mmap`` threshold to that
size (up to 32 MB) and serves the next bodies from the heap, where, freed between buffers
still held, they fragment it: a backfill's peak RSS grew with the events it moved (+78 MB
from 100,000 to 1,000,000 at the default concurrency, against a flat 40 MB of Python objects).
Fixing the threshold at glibc's default (128 KiB) keeps every body in its own mapping.
Elsewhere (another libc, no ctypes) this does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

__all__ = ["unmap_large_buffers"]

#: ``mallopt``'s M_MMAP_THRESHOLD, and glibc's own default for it
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 128 * 1024
_done = False


def unmap_large_buffers() -> None:
    """Have glibc map every buffer over 128 KiB on its own (once per process; see the module)."""
    global _done
    if _done or not sys.platform.startswith("linux"):
        return
    _done = True
    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL("libc.so.6")  # glibc's name: another libc raises OSError
        libc.mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)
