"""Scroll streams (spec §3, §4.2, §4.5): contacts and events as async iterators that never
lapse and never repeat. The package's one face: the stream (:mod:`._stream`), what a resource's
scroll answers it (:mod:`._kind`), its options, what it hands out and where a slow consumer's
pages wait (:mod:`._pages`), its background task (:mod:`._task`) and its sans-I/O decisions
(:mod:`._machine`).
"""

from asyncwifi._stream._kind import ScrollKind
from asyncwifi._stream._pages import (
    DEFAULT_OPTIONS,
    RAW,
    SCROLL_WINDOW,
    SPILL_BUDGET,
    Record,
    ScrollPage,
    StreamOptions,
    limited,
)
from asyncwifi._stream._start import scroll_start_wait
from asyncwifi._stream._stream import ScrollStream

__all__ = [
    "DEFAULT_OPTIONS",
    "RAW",
    "SCROLL_WINDOW",
    "SPILL_BUDGET",
    "Record",
    "ScrollKind",
    "ScrollPage",
    "ScrollStream",
    "StreamOptions",
    "limited",
    "scroll_start_wait",
]
