"""The command line's value types: one form for each kind of value, whatever the command.

- :class:`Duration`: every span of time an option takes, in the one form of
  :func:`~asyncwifi._instant.read_duration` (``90``, ``90s``, ``1m30s``, ``1h``, ``2d``;
  a bare number is seconds), read to seconds; its help says so (:func:`duration_help`).
- :class:`Format`: every ``--format``: ``text`` (for people: a table where the result is
  a list) or ``json`` (for programs); ``table``, its old spelling, for one release.
- :class:`PageSizeType`: every ``--page-size``, ``max`` or a number, by the resource's rule;
  :class:`Parsed`: a value read by one of the engine's parsers (an instant).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from asyncwifi._defaults import EVENTS_PAGE_SIZE
from asyncwifi._instant import DURATION_FORMS, format_duration, parse_instant, read_duration
from asyncwifi.cli._options import FORMATS, deprecated
from asyncwifi.errors import ValidationError

__all__ = [
    "Duration",
    "Format",
    "InstantType",
    "PageSizeType",
    "Parsed",
    "duration_help",
    "duration_option",
    "events_page",
    "format_option",
]

V = TypeVar("V")

#: old values of ``--format``, still read for one release (with a deprecation line)
_OLD_FORMATS = {"table": "text"}


class Duration(click.ParamType[float]):
    """A span of time in seconds (a ``float``), written in :data:`DURATION_FORMS`, at
    least ``min`` (more than it when ``min_open``) and at most ``max``."""

    name = "duration"

    def __init__(
        self, *, min: float = 0.0, min_open: bool = False, max: float | None = None
    ) -> None:
        self.min, self.min_open, self.max = min, min_open, max

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "DURATION"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        else:
            try:
                seconds = read_duration(str(value)).total_seconds()
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        low = format_duration(self.min)
        if seconds < self.min or (self.min_open and seconds == self.min):
            above = f"more than {low}" if self.min_open else f"at least {low}"
            self.fail(f"{value!r} must be {above}", param, ctx)
        if self.max is not None and seconds > self.max:
            self.fail(f"{value!r} must be at most {format_duration(self.max)}", param, ctx)
        return seconds

    def bounds(self) -> str:
        """The range, as the help says it (``> 0s``, ``>= 1s``, ``<= 1d``)."""
        said = []
        if self.min or self.min_open:
            said.append(f"{'>' if self.min_open else '>='} {format_duration(self.min)}")
        if self.max is not None:
            said.append(f"<= {format_duration(self.max)}")
        return ", ".join(said)


def duration_help(text: str, kind: Duration, default: float | str | None = None) -> str:
    """``text`` with what every duration option's help says: its forms, its bounds and
    its default, written as one would type it (``[default: 1m]``)."""
    bounds = kind.bounds()
    shown = [f"a duration: {DURATION_FORMS}" + (f"; {bounds}" if bounds else "")]
    if default is not None:
        value = default if isinstance(default, str) else format_duration(default)
        shown.append(f"default: {value}")
    return f"{text}  [{'; '.join(shown)}]"


def duration_option(
    *decls: str,
    help: str,
    default: float | None = None,
    said_default: str | None = None,
    min: float = 0.0,
    min_open: bool = False,
    max: float | None = None,
    **options: Any,
) -> Callable[[Any], Any]:
    """An option taking a duration (seconds, a ``float``): :class:`Duration` with its
    bounds, and a help that says the forms and the default (``said_default``: one that is
    not a number, such as "the object plan's"); ``options``: click's other keywords."""
    duration = Duration(min=min, min_open=min_open, max=max)
    return click.option(
        *decls,
        type=duration,
        default=default,
        show_default=False,
        help=duration_help(help, duration, said_default if said_default else default),
        **options,
    )


class Format(click.Choice[str]):
    """``--format``: :data:`FORMATS`; ``table`` (the old word for ``text``) is read with a
    deprecation line, for one release."""

    def __init__(self) -> None:
        super().__init__(FORMATS)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        new = _OLD_FORMATS.get(str(value).lower()) if isinstance(value, str) else None
        if new is not None:
            if ctx is not None:
                deprecated(ctx, f"--format {value}", f"--format {new}")
            return new
        return super().convert(value, param, ctx)


def format_option(default: str, help: str) -> Callable[[Any], Any]:
    """``--format text|json``: ``help`` says what each gives, ``default`` which this
    command's reader is (``text`` where people read, ``json`` where programs do)."""
    return click.option(
        "--format",
        "fmt",
        type=Format(),
        default=default,
        show_default=True,
        help=help,
    )


class Parsed(click.ParamType[V]):
    """A click type read by one of the engine's parsers (a ``ValueError`` is a usage error)."""

    def __init__(self, name: str, kind: type[V], parse: Callable[[str], V]) -> None:
        self.name = name
        self._kind = kind
        self._parse = parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> V:
        if isinstance(value, self._kind):
            return value
        try:
            return self._parse(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class PageSizeType(click.ParamType[V]):
    """``--page-size``: ``max`` (the largest page the resource allows) or a number of
    records per request, by the resource's own rule (``rule``)."""

    name = "page_size"

    def __init__(self, rule: Callable[[int | str], V]) -> None:
        self._rule = rule

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "max|N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> V:
        text = str(value).strip()
        try:
            return self._rule(int(text) if text.isdigit() else text)
        except ValidationError as exc:
            self.fail(str(exc).removeprefix("--page-size "), param, ctx)


def InstantType() -> Parsed[datetime]:
    """An ISO 8601 date or date-time; no zone means UTC."""
    return Parsed("DATE", datetime, parse_instant)


def events_page(size: int | str) -> int:
    """spec §8: at most 10,000 events a request; ``max`` is that."""
    if size == "max":
        return EVENTS_PAGE_SIZE
    if not isinstance(size, int) or not 1 <= size <= EVENTS_PAGE_SIZE:
        raise ValidationError(
            f"--page-size must be 'max' or an integer from 1 to {EVENTS_PAGE_SIZE:,}, got {size!r}"
        )
    return size
