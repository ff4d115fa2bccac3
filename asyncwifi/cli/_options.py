"""The command line's shared options and its one vocabulary.

- **Global options** (:func:`global_options`): those of ``asyncwifi`` itself (the account,
  ``--allowance``, ``--simulate``, the output) are also accepted after the subcommand that
  uses them (``asyncwifi sync --allowance 20000``), declared once here; each command's
  help lists them apart. Given in both places with different values: one usage line.
- **Old spellings** (:func:`deprecated_alias`): a renamed option keeps its old name for one
  release, hidden from the help; using it says so once
  (``asyncwifi: warning: --mode is deprecated; use --rate-limit-mode``).
- :class:`Command` and :class:`Group`: every command of the tree is one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click
from click.core import ParameterSource

from asyncwifi._client import ALLOWANCE_ENV
from asyncwifi.cli._app import App, _configure_logging
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._simulate import SimOptions
from asyncwifi.errors import ValidationError

if TYPE_CHECKING:
    from asyncwifi.engine import PiiPolicy

__all__ = [
    "ACCOUNT",
    "FORMATS",
    "LOGS",
    "OUTPUT",
    "Command",
    "DeprecatedOption",
    "GlobalOption",
    "Group",
    "deprecated",
    "deprecated_alias",
    "global_options",
]

#: the one vocabulary of ``--format`` and ``--log-format``: for people, for programs
FORMATS = ("text", "json")
#: ``ctx.meta`` keys: the global options given before the subcommand, the old spellings
#: used (to say once each)
_GIVEN = "asyncwifi.given"
_OLD = "asyncwifi.deprecated"


def deprecated(ctx: click.Context, old: str, new: str) -> None:
    """Note that ``old`` was used for ``new``: the command says it once (``Command``)."""
    said: dict[str, str] = ctx.meta.setdefault(_OLD, {})
    said.setdefault(old, new)


def _say_deprecated(ctx: click.Context) -> None:
    said: dict[str, str | None] = ctx.meta.setdefault(_OLD, {})
    display = ctx.ensure_object(App).display
    for old, new in said.items():
        if new is not None:
            display.warning("deprecated", f"{old} is deprecated; use {new}", option=old, use=new)
            said[old] = None  # said


class DeprecatedOption(click.Option):
    """An option's old name, kept for one release: hidden, and read as ``use`` (what to
    type instead: ``--wait``, ``--format json``), the option stored as ``target`` in the
    same command; a flag gives it ``stands_for``."""

    def __init__(
        self, *args: Any, use: str, target: str, stands_for: Any = None, **kwargs: Any
    ) -> None:
        kwargs["hidden"] = True
        super().__init__(*args, **kwargs)
        self.use, self.target, self.stands_for = use, target, stands_for

    def resolve(self, ctx: click.Context) -> None:
        """Once every option is read: the old name's value becomes the new one's (both
        given, and different: one usage line)."""
        assert self.name is not None
        value = ctx.params.pop(self.name, None)
        if ctx.get_parameter_source(self.name) is not ParameterSource.COMMANDLINE:
            return
        given = self.stands_for if self.is_flag else value
        old, new = self.opts[0], self.use.split()[0]
        if (
            ctx.get_parameter_source(self.target) is ParameterSource.COMMANDLINE
            and ctx.params.get(self.target) != given
        ):
            raise click.UsageError(f"{old} and {new} disagree: give {new} once", ctx)
        ctx.params[self.target] = given
        ctx.set_parameter_source(self.target, ParameterSource.COMMANDLINE)
        deprecated(ctx, old, self.use)


def deprecated_alias(
    old: str, *, use: str, target: str, stands_for: Any = None, **kwargs: Any
) -> Callable[[Any], Any]:
    """``old``, the former spelling of ``use`` (the option stored as ``target``): a flag
    (``stands_for``: the value it gives ``target``) or an option of the same ``type``."""
    if stands_for is not None:
        kwargs["is_flag"] = True
    name = "deprecated_" + old.lstrip("-").replace("-", "_")
    return click.option(
        old, name, cls=DeprecatedOption, use=use, target=target, stands_for=stands_for,
        **kwargs,
    )  # fmt: skip


class GlobalOption(click.Option):
    """An option of ``asyncwifi`` itself, also accepted after a subcommand that uses it."""


class Command(click.Command):
    """A command of ``asyncwifi``: its own options, then the global ones it accepts; old
    spellings read as their new names."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        for param in self.params:
            if isinstance(param, DeprecatedOption):
                param.resolve(ctx)
        _say_deprecated(ctx)
        return rest

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        own: list[tuple[str, str]] = []
        shared: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and isinstance(param, click.Option):
                (shared if isinstance(param, GlobalOption) else own).append(record)
        if own:
            with formatter.section("Options"):
                formatter.write_dl(own)
        if shared:
            with formatter.section("Global options (here or before the command)"):
                formatter.write_dl(shared)


class Group(click.Group):
    """A group of ``asyncwifi``'s commands: its commands are :class:`Command`\\ s."""

    command_class = Command
    group_class = type


# -- the global options ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # one option: the same object in every group
class _Global:
    """One global option: its click declaration and where its value goes in the App."""

    decls: tuple[str, ...]
    apply: Callable[[click.Context, App, Any], None]
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the default, and the root's variable (after a subcommand: only what is typed)
    default: Any = None
    envvar: str | None = None
    #: the help after a subcommand, when the root's is long
    brief: str | None = None


def _allowance(ctx: click.Context, app: App, text: str | None) -> None:
    """``--allowance`` (or its variable) checked by the limiter's one rule: a bad value is
    one usage line (exit 2) before anything is read or sent."""
    from asyncwifi.errors import ValidationError
    from asyncwifi.ratelimit import allowance_of

    source = ctx.get_parameter_source("allowance")
    what = ALLOWANCE_ENV if source is ParameterSource.ENVIRONMENT else "--allowance"
    try:
        app.allowance = allowance_of(text.strip() if text is not None else None, what)
    except ValidationError as exc:
        raise click.UsageError(str(exc), ctx) from None


def _verbose(ctx: click.Context, app: App, value: int) -> None:
    app.verbose = value
    _configure_logging(app.display.log_format, value)


def _log_format(ctx: click.Context, app: App, value: str | None) -> None:
    if value:
        app.display.log_format = "json" if value == "json" else "text"
        _configure_logging(app.display.log_format, None)


def _quiet(ctx: click.Context, app: App, value: bool) -> None:
    if value:
        app.display.quiet = True


def _sim(name: str) -> Callable[[click.Context, App, Any], None]:
    def apply(ctx: click.Context, app: App, value: Any) -> None:
        setattr(app.sim, name, value)

    return apply


def _set(name: str) -> Callable[[click.Context, App, Any], None]:
    def apply(ctx: click.Context, app: App, value: Any) -> None:
        setattr(app, name, value)

    return apply


#: the account: who the command talks to, and the month's allowance it keeps to
ACCOUNT = (
    _Global(("--config",), _set("config"), {
        "type": click.Path(dir_okay=False, path_type=Path),
        "help": "TOML file with client_key, client_secret, base_url, organization "
        "(default: ~/.config/asyncwifi/config.toml; environment variables win)."},
        brief="TOML file with the credentials (default: ~/.config/asyncwifi/config.toml)."),
    _Global(("--allow-http",), _set("allow_http"), {
        "is_flag": True, "help": "Allow a plain-http base URL (a local simulator)."}),
    _Global(("--allowance",), _allowance, {
        "metavar": "TEXT",
        "help": "The month's object allowance (spec §8): objects a month (20000) or the "
        "subscription's terms ('10 access points': 2,000 each; '2000 contacts': 10 each). "
        "Dry runs, progress and quota say what is left of it; once it is spent, requests "
        f"for objects stop until the 1st (or set {ALLOWANCE_ENV})."},
        envvar=ALLOWANCE_ENV,
        brief="The month's object allowance: objects a month (20000) or the "
        f"subscription's terms ('10 access points'; or set {ALLOWANCE_ENV})."),
    _Global(("--simulate",), _sim("enabled"), {
        "is_flag": True,
        "help": "Run against an embedded simulator (in this process, fast clock, seeded "
        "data): no account needed."}),
    _Global(("--sim-speed",), _sim("speed"), {
        "type": click.FloatRange(min=0.001, max=1_000_000),
        "help": "--simulate: clock speed, a multiple of real time (faster than asyncwifi "
        "simulate's: a spent day's quota resets in minutes)."},
        default=SimOptions.speed),
    _Global(("--sim-seed",), _sim("seed"), {"type": int, "help": "--simulate: data seed."},
            default=SimOptions.seed),
    _Global(("--sim-events-per-day",), _sim("events_per_day"), {
        "type": click.IntRange(0),
        "help": "--simulate: events generated per day of the requested range."},
        default=SimOptions.events_per_day),
    _Global(("--sim-day-limit",), _sim("day_limit"), {
        "type": click.IntRange(1), "help": "--simulate: requests per day."},
        default=SimOptions.day_limit),
)  # fmt: skip
_VERBOSE = _Global(
    ("-v", "--verbose"),
    _verbose,
    {"count": True, "help": "Log more (-v: info, -vv: debug; never secrets)."},
    default=0,
)
_LOG_FORMAT = _Global(
    ("--log-format",),
    _log_format,
    {
        "type": click.Choice(FORMATS),
        "help": "text (default) or json: one JSON object per line on stderr, for daemons.",
    },
)
#: the SDK's own log lines: how many, in which form
LOGS = (_VERBOSE, _LOG_FORMAT)
#: the command's own lines, and the SDK's
OUTPUT = (
    _VERBOSE,
    _Global(("-q", "--quiet"), _quiet, {
        "is_flag": True, "help": "No progress; only warnings and errors."}),
    _LOG_FORMAT,
)  # fmt: skip


def global_options(*shared: tuple[_Global, ...], root: bool = False) -> Callable[[Any], Any]:
    """The global options of ``shared`` (:data:`ACCOUNT`, :data:`OUTPUT`, :data:`LOGS`):
    on ``asyncwifi`` itself (``root``: with their defaults and variables), or after a
    subcommand, where only what is typed counts and wins over the variables (typed
    before the command too, and different: one usage line)."""
    specs = list(dict.fromkeys(spec for group in shared for spec in group))

    def decorate(fn: Any) -> Any:
        for spec in reversed(specs):
            count = bool(spec.options.get("count"))
            options = dict(spec.options)
            if not root and spec.brief is not None:
                options["help"] = spec.brief
            fn = click.option(
                *spec.decls,
                cls=GlobalOption,
                expose_value=False,
                # after a subcommand too: only what is typed there is applied
                default=spec.default,
                envvar=spec.envvar if root else None,
                show_default=spec.default is not None and not count,
                callback=_at_root(spec) if root else _after_command(spec),
                **options,
            )(fn)
        return fn

    return decorate


def _at_root(spec: _Global) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if ctx.get_parameter_source(str(param.name)) is ParameterSource.COMMANDLINE:
            ctx.meta.setdefault(_GIVEN, {})[param.name] = value
        spec.apply(ctx, ctx.ensure_object(App), value)

    return callback


def _after_command(spec: _Global) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if ctx.get_parameter_source(str(param.name)) is not ParameterSource.COMMANDLINE:
            return
        before: dict[str, Any] = ctx.meta.get(_GIVEN, {})
        if param.name in before and before[param.name] != value:
            name = cast(click.Option, param).opts[-1]
            raise click.UsageError(
                f"{name} is given before '{ctx.info_name}' and after it, with different "
                "values: give it once",
                ctx,
            )
        spec.apply(ctx, ctx.ensure_object(App), value)

    return callback


def pii_options(where: str) -> Callable[[Any], Any]:
    """``--pii`` and ``--pii-key-file``, as every command that writes records takes them
    (``where``: what the policy keeps PII out of, for the help)."""

    def wrap(fn: Any) -> Any:
        fn = click.option("--pii-key-file", default=None, metavar="PATH",
                          help="The key of --pii hash (never stored).")(fn)  # fmt: skip
        return click.option(
            "--pii",
            default=None,
            metavar="FIELD=ACTION,...",
            help=f"Keep PII out of {where}: email, phone, first_name, last_name (name: both), "
            "birth_date = keep, drop or hash (HMAC-SHA256, key from ASYNCWIFI_PII_KEY or "
            "--pii-key-file), e.g. email=hash,phone=hash,name=drop.",
        )(fn)

    return wrap


def pii_policy(pii: str | None, key_file: str | None) -> PiiPolicy | None:
    """The ``--pii`` policy (None: none); a bad one is one line, exit 78, before anything."""
    from asyncwifi.engine import PiiPolicy

    try:
        return PiiPolicy.parse(pii, key_file=key_file)
    except ValidationError as exc:
        raise CliFailure(str(exc), ExitCode.CONFIG) from None
