"""What the request pipeline tells metrics, tracing and the log (``Client(hooks=...)``,
``add_hook``): an attempt about to be sent, its response, a retry, and the scopes around
calls and attempts. A hook that raises is logged, never raised into a call."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asyncwifi._scopes import Scope

__all__ = ["Hooks", "RequestInfo", "ResponseInfo", "RetryInfo"]

log = logging.getLogger("asyncwifi.http")


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """Passed to ``on_request``: an attempt is about to be sent."""

    method: str
    path: str
    attempt: int
    #: real seconds this attempt waited for its scheduler slot
    waited: float = 0.0
    #: clock time of its admission (what the rate-limit windows count; the task that sends
    #: it may resume a little later on a busy event loop)
    admitted_at: float = 0.0


@dataclass(frozen=True, slots=True)
class ResponseInfo:
    """Passed to ``on_response``: an attempt got a response (``status``) in ``elapsed`` s."""

    method: str
    path: str
    status: int
    elapsed: float
    attempt: int
    request_id: str | None


@dataclass(frozen=True, slots=True)
class RetryInfo:
    """Passed to ``on_retry``: attempt ``attempt`` failed with ``error``; next in ``wait`` s."""

    method: str
    path: str
    attempt: int
    wait: float
    error: str


@dataclass(slots=True)
class Hooks:
    """Callbacks for metrics; an exception in a hook is logged, never raised into a call."""

    on_request: list[Callable[[RequestInfo], None]] = field(default_factory=list)
    on_response: list[Callable[[ResponseInfo], None]] = field(default_factory=list)
    on_retry: list[Callable[[RetryInfo], None]] = field(default_factory=list)
    #: context managers around each call / each attempt (see _scopes; asyncwifi.otel)
    call_scopes: list[Scope] = field(default_factory=list)
    attempt_scopes: list[Scope] = field(default_factory=list)
    #: called with the resource ("events") when an expired scroll resumes
    on_scroll_resume: list[Callable[[str], None]] = field(default_factory=list)

    def fire(self, callbacks: list[Callable[[Any], None]], info: object) -> None:
        for callback in callbacks:
            try:
                callback(info)
            except Exception:
                log.warning("hook %r raised; the request goes on", callback, exc_info=True)

    def answered(
        self,
        method: str,
        path: str,
        status: int,
        elapsed: float,
        attempt: int,
        request_id: str | None,
    ) -> None:
        """An attempt got its response: logged (debug) and told ``on_response``."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s %s -> %d in %.1f ms (attempt %d)",
                method,
                path,
                status,
                elapsed * 1000,
                attempt,
            )
        if self.on_response:
            info = ResponseInfo(method, path, status, elapsed, attempt, request_id)
            self.fire(self.on_response, info)

    def retrying(
        self, method: str, path: str, error: BaseException, attempts: int, wait: float, *,
        quiet: bool,
    ) -> None:  # fmt: skip
        """Attempt ``attempts`` failed with ``error``; the next goes in ``wait`` s: logged
        (a warning, or ``quiet``: info) and told ``on_retry``."""
        described = type(error).__name__
        log.log(
            logging.INFO if quiet else logging.WARNING,
            "%s %s failed (%s: %s); retry %d in %.2f s",
            method,
            path,
            described,
            error,
            attempts,
            wait,
        )
        if self.on_retry:
            self.fire(self.on_retry, RetryInfo(method, path, attempts, wait, described))
