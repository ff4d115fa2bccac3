"""The export job's own error, under the SDK's root :class:`~asyncwifi.errors.AsyncWifiError`
(its destination's are the engine's: ``StateMismatchError``, ``DestinationNotWritableError``)."""

from __future__ import annotations

from asyncwifi.errors import AsyncWifiError

__all__ = ["SliceIncompleteError"]


class SliceIncompleteError(AsyncWifiError):
    """A slice could not be streamed to a proved end (its scroll kept lapsing with no
    progress, e.g. ids that expire sooner than a page can be asked for on records with no
    time). Everything delivered is committed; the job is not done and a run resumes it."""
