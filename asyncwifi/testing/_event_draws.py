"""How the event log is drawn: times, type codes and owners, from a seeded ``Random``.

Deterministic: the same ``Random`` state gives the same arrays. ``EventStore`` draws its
log once at construction and again for each :meth:`~EventStore.append`.
"""

from __future__ import annotations

import math
import random
import re
from array import array
from collections.abc import Sequence
from itertools import accumulate

__all__ = ["CODE_TABLE", "Tables", "draw_owners", "owner_tables", "poisson_times", "redirect"]

#: the weight of each type code (``EVENT_TYPES + UNDOCUMENTED_TYPES`` order)
_WEIGHTS = (30, 6, 32, 8, 5, 3, 5, 2, 4, 5, 1)


def _code_table() -> bytes:
    """A byte-translation table mapping a uniform random byte to a type code by weight."""
    total = sum(_WEIGHTS)
    table = bytearray()
    for code, weight in enumerate(_WEIGHTS):
        table.extend([code] * round(256 * weight / total))
    table.extend([2] * (256 - len(table)))
    return bytes(table[:256])


#: ``randbytes(n).translate(CODE_TABLE)``: ``n`` type codes drawn by weight
CODE_TABLE = _code_table()


_BLOCK = 1 << 18


def poisson_times(rnd: random.Random, count: int, start: float, end: float) -> array[int]:
    """``count`` sorted epoch seconds in ``[start, end)``: Poisson arrivals, scaled to fit.

    Arrivals with exponential gaps look like real traffic (several events may share a
    second, a trap for resuming by time) and come out sorted, with no sort to pay for.
    Two passes over the same random draws (the first only sums the gaps) keep the memory
    to the output array, even for tens of millions of events.
    """
    out = array("q")
    if not count:
        return out
    rand, log = rnd.random, math.log
    state = rnd.getstate()
    total = 0.0
    for lo in range(0, count + 1, _BLOCK):
        total += sum([-log(1.0 - rand()) for _ in range(min(_BLOCK, count + 1 - lo))])
    rnd.setstate(state)
    scale = (end - start) / total
    acc = 0.0
    for lo in range(0, count + 1, _BLOCK):
        gaps = [-log(1.0 - rand()) for _ in range(min(_BLOCK, count + 1 - lo))]
        sums = list(accumulate(gaps, initial=acc))
        acc = sums[-1]
        out.extend([int(start + t * scale) for t in sums[1:]])
    del out[count:]
    return out


Tables = tuple[list[int] | None, list[int] | None]


def owner_tables(contacts: Sequence[tuple[str, str, str]]) -> Tables:
    """Where an email (then an SMS) event drawn for each contact goes instead: the next
    contact with an email address (a phone number); ``None`` when every contact has one."""
    n = max(1, len(contacts))

    def next_with(field: int) -> list[int] | None:
        having = [i for i, c in enumerate(contacts) if c[field]]
        if not having or len(having) == n:
            return None
        table, k = [0] * n, 0
        for i in range(n):
            while having[k % len(having)] < i and k < len(having):
                k += 1
            table[i] = having[k % len(having)]
        return table

    return next_with(0), next_with(1)


def redirect(owners: array[int], codes: bytes, tables: Tables) -> None:
    """Move email and SMS events to contacts that have an address (see :func:`owner_tables`)."""
    for pattern, table in zip((rb"[\x03-\x05]", rb"[\x06\x07]"), tables, strict=True):
        if table is not None:
            for match in re.finditer(pattern, codes):
                i = match.start()
                owners[i] = table[owners[i]]


def draw_owners(
    rnd: random.Random, codes: bytes, contacts: Sequence[tuple[str, str, str]]
) -> array[int]:
    """The contact index of each event, drawn uniformly, in blocks.

    Email events go to contacts with an email address and SMS events to contacts with a
    phone number (a draw that lands elsewhere moves to the next contact that has one).
    """
    n = max(1, len(contacts))
    out = array("I")
    for lo in range(0, len(codes), _BLOCK):
        raw = array("I", rnd.randbytes(4 * min(_BLOCK, len(codes) - lo)))
        out.extend(map(n.__rmod__, raw))
    redirect(out, codes, owner_tables(contacts))
    return out
