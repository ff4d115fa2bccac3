"""Errors of the export engine, under the SDK's root :class:`~asyncwifi.errors.AsyncWifiError`."""

from __future__ import annotations

from asyncwifi.errors import AsyncWifiError

__all__ = [
    "BackfillError",
    "OutputNotWritableError",
    "SliceIncompleteError",
    "StateMismatchError",
]


class BackfillError(AsyncWifiError):
    """The export job cannot start or continue as asked."""


class StateMismatchError(BackfillError):
    """The state file and the job or its output disagree: the state belongs to another job
    (other range, types, output or options), or the output exists without one, or is
    shorter than what the state says was committed (someone else wrote or truncated it)."""


class OutputNotWritableError(BackfillError):
    """The output or the state file cannot be created or written where asked."""


class SliceIncompleteError(BackfillError):
    """A slice could not be streamed to a proved end (its scroll kept lapsing with no
    progress, e.g. ids that expire sooner than a page can be asked for on records with no
    time). Everything delivered is committed; the job is not done and a run resumes it."""
