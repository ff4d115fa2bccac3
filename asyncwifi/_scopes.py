"""Scope hooks: context managers entered around each API call and each attempt.

``Hooks.call_scopes`` wrap ``RequestPipeline.read``/``.write`` (all attempts of a call);
``Hooks.attempt_scopes`` wrap each ``RequestPipeline._attempt`` (token, slot, network).
They exist for tracing (``asyncwifi.otel``: a span per call and per attempt) and cost one
list check per call when unused.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, Protocol, TypeVar

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


class ScopeHooks(Protocol):
    """The hooks a scoped pipeline carries (``_core.Hooks``)."""

    @property
    def call_scopes(self) -> list[Scope]: ...
    @property
    def attempt_scopes(self) -> list[Scope]: ...


class Scoped(Protocol):
    """What the decorators need of the pipeline: its hooks (structural, so that this
    module needs nothing of ``_core`` and ``_core`` can import it)."""

    @property
    def hooks(self) -> ScopeHooks: ...


class AttemptLike(Protocol):
    """What ``attempt_scope`` reads of a call."""

    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def attempt(self) -> int: ...


S = TypeVar("S", bound=Scoped)
A = TypeVar("A", bound=AttemptLike)


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
    [Callable[Concatenate[S, str, str, P], Awaitable[T]]],
    Callable[Concatenate[S, str, str, P], Awaitable[T]],
]:
    """Run ``RequestPipeline.read``/``RequestPipeline.write`` inside ``hooks.call_scopes``."""

    def decorate(
        fn: Callable[Concatenate[S, str, str, P], Awaitable[T]],
    ) -> Callable[Concatenate[S, str, str, P], Awaitable[T]]:
        async def within(scopes: list[Scope], info: CallInfo, call: Awaitable[T]) -> T:
            with enter(scopes, info):
                return await call

        @functools.wraps(fn)
        def scoped(
            self: S, method: str, path: str, /, *args: P.args, **kw: P.kwargs
        ) -> Awaitable[T]:
            # without scope hooks, the call's own coroutine: not one frame more
            call = fn(self, method, path, *args, **kw)
            scopes = self.hooks.call_scopes
            if not scopes:
                return call
            return within(scopes, CallInfo(method, path, kind), call)

        return scoped

    return decorate


def attempt_scope(fn: Callable[[S, A], Awaitable[T]]) -> Callable[[S, A], Awaitable[T]]:
    """Run ``RequestPipeline._attempt`` inside ``hooks.attempt_scopes``."""

    async def within(scopes: list[Scope], info: CallInfo, attempt: Awaitable[T]) -> T:
        with enter(scopes, info):
            return await attempt

    @functools.wraps(fn)
    def scoped(self: S, call: A) -> Awaitable[T]:
        scopes = self.hooks.attempt_scopes
        if not scopes:
            return fn(self, call)
        info = CallInfo(call.method, call.path, "attempt", call.attempt + 1)
        return within(scopes, info, fn(self, call))

    return scoped
