"""The mass-delete guard (issue 41): one bad answer must not retire a whole table.

A complete snapshot (hotspots, segments, a contact reconcile) marks deleted every live row
it did not see. An empty ``200`` (legal by the reference) or a key whose scope was narrowed
would retire everything, and every consumer downstream would act on it. So a snapshot that
would retire more than ``max(min_rows, share × live rows)`` withholds its deletes (its
upserts still apply) and says so; the next honest snapshot applies real deletes, and
``allow`` accepts that many mass deletes (``--allow-mass-delete``: one).
"""

from __future__ import annotations

from dataclasses import dataclass

from asyncwifi.errors import ValidationError

__all__ = ["MASS_DELETE_ROWS", "MASS_DELETE_SHARE", "DeleteGuard"]

#: a snapshot may retire up to this many rows whatever the table's size
MASS_DELETE_ROWS = 10
#: ... or up to this share of the table's live rows, whichever is more
MASS_DELETE_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class DeleteGuard:
    """The thresholds of one write's deletes (see the module docstring); ``allow``: the
    write may retire any number of rows (a mass delete accepted once)."""

    min_rows: int = MASS_DELETE_ROWS
    share: float = MASS_DELETE_SHARE
    allow: bool = False

    def __post_init__(self) -> None:
        rows = self.min_rows
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise ValidationError(f"mass_delete_rows must be an integer >= 0, got {rows!r}")
        share = self.share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ValidationError(f"mass_delete_share must be within [0, 1], got {share!r}")

    def limit(self, live: int) -> float:
        """The most rows a snapshot may retire from a table of ``live`` rows."""
        return max(self.min_rows, self.share * live)

    def withholds(self, live: int, retiring: int) -> bool:
        """Whether retiring ``retiring`` of ``live`` rows is a mass delete to withhold."""
        return not self.allow and retiring > self.limit(live)

    def is_mass(self, live: int, retiring: int) -> bool:
        """Whether retiring ``retiring`` of ``live`` rows is beyond the thresholds."""
        return retiring > self.limit(live)
