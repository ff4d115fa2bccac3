"""Counting admissions in sliding windows, for tests that check a limit was kept."""

from __future__ import annotations


def most_in_window(times: list[float], span: float) -> int:
    """The most of ``times`` in any window of ``span`` seconds (half-open, as a limit's)."""
    ts, best, j = sorted(times), 0, 0
    for i, t in enumerate(ts):
        while ts[j] <= t - span:
            j += 1
        best = max(best, i - j + 1)
    return best
