"""Errors of the export engine, under the SDK's root :class:`~asyncwifi.errors.AsyncWifiError`."""

from __future__ import annotations

from asyncwifi.errors import AsyncWifiError

__all__ = [
    "BackfillError",
    "OutputConflictError",
    "OutputNotWritableError",
    "StateMismatchError",
]


class BackfillError(AsyncWifiError):
    """The export job cannot start or continue as asked."""


class StateMismatchError(BackfillError):
    """The state file belongs to another job (other range, types, output or options)."""


class OutputConflictError(BackfillError):
    """The output does not agree with the state: it exists without one, or is shorter than
    what the state says was committed (someone else wrote or truncated it)."""


class OutputNotWritableError(BackfillError):
    """The output or the state file cannot be created or written where asked."""
