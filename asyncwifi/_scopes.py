"""Scope hooks: context managers entered around each API call and each attempt.

``Hooks.call_scopes`` wrap ``Api.read``/``Api.write`` (all attempts of a call);
``Hooks.attempt_scopes`` wrap each ``Api._attempt`` (token, scheduler slot, network).
They exist for tracing (``asyncwifi.otel``: a span per call and per attempt) and cost one
list check per call when unused.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

if TYPE_CHECKING:
    from asyncwifi._core import Api, _Call
    from asyncwifi._transport import Response

__all__ = ["CallInfo", "Scope", "attempt_scope", "call_scope", "enter"]

log = logging.getLogger("asyncwifi.http")
T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class CallInfo:
    """Passed to a scope hook: ``kind`` "read" or "write" for a call, "attempt" for one
    attempt of it (``attempt`` counts from 1; 0 for a call)."""

    method: str
    path: str
    kind: str
    attempt: int = 0


#: a scope hook: given the call, a context manager to run it in
Scope = Callable[[CallInfo], AbstractContextManager[object]]


def enter(scopes: list[Scope], info: CallInfo) -> AbstractContextManager[object]:
    """The hooks' context managers as one; a hook that fails to enter is logged, skipped."""
    if not scopes:
        return nullcontext()
    stack = ExitStack()
    for scope in scopes:
        try:
            stack.enter_context(scope(info))
        except Exception:
            log.warning("scope hook %r raised; the request goes on", scope, exc_info=True)
    return stack


def call_scope(
    kind: str,
) -> Callable[
    [Callable[Concatenate[Api, str, str, P], Awaitable[T]]],
    Callable[Concatenate[Api, str, str, P], Awaitable[T]],
]:
    """Run ``Api.read``/``Api.write`` inside ``hooks.call_scopes``."""

    def decorate(
        fn: Callable[Concatenate[Api, str, str, P], Awaitable[T]],
    ) -> Callable[Concatenate[Api, str, str, P], Awaitable[T]]:
        @functools.wraps(fn)
        async def scoped(self: Api, method: str, path: str, /, *args: P.args, **kw: P.kwargs) -> T:
            scopes = self.hooks.call_scopes
            if not scopes:
                return await fn(self, method, path, *args, **kw)
            with enter(scopes, CallInfo(method, path, kind)):
                return await fn(self, method, path, *args, **kw)

        return scoped

    return decorate


def attempt_scope(
    fn: Callable[[Api, _Call], Awaitable[Response]],
) -> Callable[[Api, _Call], Awaitable[Response]]:
    """Run ``Api._attempt`` inside ``hooks.attempt_scopes``."""

    @functools.wraps(fn)
    async def scoped(self: Api, call: _Call) -> Response:
        scopes = self.hooks.attempt_scopes
        if not scopes:
            return await fn(self, call)
        with enter(scopes, CallInfo(call.method, call.path, "attempt", call.attempt + 1)):
            return await fn(self, call)

    return scoped
