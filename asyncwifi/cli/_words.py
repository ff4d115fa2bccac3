"""How the command writes a count for a person: ``1 login``, ``2,000 logins`` (a leaf
module: every other module of the command may use it)."""

from __future__ import annotations

__all__ = ["counted", "plural"]


def plural(count: int, noun: str) -> str:
    """``login`` for 1, ``logins`` otherwise: never ``login(s)``."""
    return noun if count == 1 else noun + "s"


def counted(count: int, noun: str) -> str:
    """``1 login``, ``2,000 logins``."""
    return f"{count:,} {plural(count, noun)}"
