"""One vocabulary on the command line (issue 44): the help of every command, read end to end,
agrees with itself.

The first half walks click's whole command tree: every duration option has the one duration
type and says its forms; an option's name means one thing in every command; every
``--format`` is ``text|json``; no two servers default to one port; no option has two names
but a deprecated one, marked as such. The second half runs the command as a user would: a
global option after its subcommand, one value whichever place it is given, the forms of a
duration, and the old spellings still read, each with one deprecation line.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from asyncwifi.cli import ExitCode
from asyncwifi.cli._command import cli
from tests.cli.conftest import Result


def _tree(command: click.Command = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    yield " ".join(path) or "asyncwifi", command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _tree(sub, (*path, name))


COMMANDS = dict(_tree())
LEAVES = {path: c for path, c in COMMANDS.items() if not isinstance(c, click.Group)}
#: the commands that talk to the API: every option of ``asyncwifi`` itself matters to them
API = {
    "contacts erase", "contacts export", "events backfill", "hotspots create", "hotspots delete",
    "hotspots get", "hotspots list", "hotspots update", "quota", "segments list", "sync",
}  # fmt: skip
#: the old spellings, kept for one release: (command, old) -> what to type instead
OLD = {
    ("simulate", "--mode"): "--rate-limit-mode",
    ("simulate", "--json"): "--format json",
    ("events backfill", "--daemon"): "--wait",
    ("contacts export", "--daemon"): "--wait",
    ("sync", "--budget"): "--request-share",
}


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


def _long_names(option: click.Option) -> list[str]:
    return [name for name in option.opts if name.startswith("--")]


def _option(path: str, name: str) -> click.Option:
    found = [o for o in _options(COMMANDS[path]) if name in o.opts + o.secondary_opts]
    assert found, f"{path} has no {name}"
    return found[0]


#: a name or a help that speaks of a span of time
_SPAN = re.compile(r"ttl|timeout|wait|poll|every|patience|max_age|slice|settle|lookback")


def _is_span(option: click.Option) -> bool:
    if option.is_flag or option.count:
        return False
    text = (option.help or "").lower()
    return bool(_SPAN.search(option.name or "")) or "seconds" in text or "(s)" in text


def test_every_duration_option_has_the_one_type_and_says_its_forms() -> None:
    from asyncwifi._instant import DURATION_FORMS
    from asyncwifi.cli._types import Duration

    spans = [(path, o) for path, c in LEAVES.items() for o in _options(c) if _is_span(o)]
    assert len(spans) >= 15  # every one of them, hidden ones included
    wrong = [f"{path} {o.opts[0]}" for path, o in spans if not isinstance(o.type, Duration)]
    assert wrong == []
    unsaid = [f"{path} {o.opts[0]}" for path, o in spans if DURATION_FORMS not in (o.help or "")]
    assert unsaid == []
    for path, option in spans:  # the same forms everywhere, a bare number in seconds
        for text in ("90", "90s", "1m30s"):
            assert option.type.convert(text, option, None) == 90.0, (path, option.opts)


def test_a_name_means_one_thing_in_every_command() -> None:
    meanings: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    for command in COMMANDS.values():
        for option in _options(command):
            kind = option.type
            choices = tuple(kind.choices) if isinstance(kind, click.Choice) else None
            meaning = (type(kind).__name__, choices, option.is_flag, option.count, option.multiple)
            for name in option.opts + option.secondary_opts:
                meanings[name].add(meaning)
    assert {name: m for name, m in meanings.items() if len(m) > 1} == {}


def test_every_format_is_text_or_json() -> None:
    formats = {
        f"{path} {name}": tuple(o.type.choices)  # type: ignore[attr-defined]
        for path, command in COMMANDS.items()
        for o in _options(command)
        for name in o.opts
        if name in ("--format", "--log-format")
    }
    assert len(formats) > 10
    assert set(formats.values()) == {("text", "json")}, formats


def test_people_read_a_table_by_default_and_programs_json() -> None:
    defaults = {
        path: _option(path, "--format").default
        for path, command in LEAVES.items()
        if any("--format" in o.opts for o in _options(command))
    }
    assert defaults == {
        "fleet status": "text",
        "quota": "text",
        "simulate": "text",
        "hotspots get": "json",
        "hotspots list": "json",
        "segments list": "json",
    }


def test_no_two_servers_default_to_one_port() -> None:
    servers: dict[int, list[str]] = defaultdict(list)
    for path, command in LEAVES.items():
        for option in _options(command):
            port = option.default
            if (option.name or "").endswith("port") and isinstance(port, int) and port > 0:
                servers[port].append(f"{path} {option.opts[0]}")
    assert servers
    assert all(len(where) == 1 for where in servers.values()), dict(servers)


def test_the_receivers_library_default_is_the_commands() -> None:
    import inspect

    from asyncwifi.webhooks import serve

    receiver = inspect.signature(serve).parameters["port"].default
    assert _option("webhooks serve", "--port").default == receiver
    assert _option("simulate", "--port").default != receiver


def test_one_name_per_option_and_old_names_are_marked() -> None:
    from asyncwifi.cli._options import Command, DeprecatedOption, Group

    doubles = [
        f"{path} {'/'.join(_long_names(o))}"
        for path, command in COMMANDS.items()
        for o in _options(command)
        if len(_long_names(o)) > 1
    ]
    assert doubles == []
    found = {}
    for path, command in COMMANDS.items():
        assert isinstance(command, Group if isinstance(command, click.Group) else Command), path
        for option in _options(command):
            if isinstance(option, DeprecatedOption):
                assert option.hidden, (path, option.opts)
                targets = {p.name for p in command.params}
                assert option.target in targets, (path, option.opts)
                assert _option(path, option.use.split()[0]).name == option.target
                found[(path, option.opts[0])] = option.use
    assert found == OLD


def test_the_options_of_asyncwifi_are_accepted_after_the_commands_they_matter_to() -> None:
    root = {
        o.opts[-1]
        for o in _options(cli)
        if not o.hidden and o.opts[-1] not in ("--version", "--help")
    }
    logs = {"--verbose", "--log-format"}
    wanted = dict.fromkeys(API, root) | {
        "simulate": logs | {"--quiet"},
        "webhooks serve": logs | {"--quiet"},
        **{path: logs for path in LEAVES if path.startswith("fleet ")},
    }
    assert set(wanted) == set(LEAVES)
    missing = {
        path: sorted(names - {n for o in _options(LEAVES[path]) for n in o.opts})
        for path, names in wanted.items()
    }
    assert {path: names for path, names in missing.items() if names} == {}


# -- as a user runs it ---------------------------------------------------------------------

SIM = ("--simulate", "--sim-events-per-day", "200")
DAY = ("--since", "2026-01-01", "--until", "2026-01-02")
DRY_RUN = (*SIM, "events", "backfill", *DAY, "--out", "e.jsonl", "--dry-run")


def _deprecations(result: Result) -> list[str]:
    return [line for line in result.err.splitlines() if "deprecated" in line]


def _one_error(result: Result) -> str:
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("asyncwifi: error: ")
    return lines[0]


@pytest.fixture
def parse() -> Iterator[Callable[..., dict[str, Any]]]:
    """The values ``asyncwifi PATH ARGS`` gives its command, nothing run (the SDK's logger,
    which the global options set up, is put back afterwards)."""
    sdk = logging.getLogger("asyncwifi")
    saved = (list(sdk.handlers), sdk.propagate, sdk.level)

    def parsed(path: str, *args: str) -> dict[str, Any]:
        names = path.split()
        ctx = cli.make_context("asyncwifi", names[:1])
        command: click.Command = cli
        for i, name in enumerate(names):
            assert isinstance(command, click.Group)
            command = command.commands[name]
            rest = list(args) if i == len(names) - 1 else names[i + 1 : i + 2]
            ctx = command.make_context(name, rest, parent=ctx)
        return dict(ctx.params)

    yield parsed
    sdk.handlers[:], sdk.propagate, sdk.level = saved


def test_sync_takes_the_allowance_its_plan_asks_for(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    # the sync's own warning says "give the real --allowance": after `sync`, where it is read
    db = f"sqlite:///{clean_env / 'sync.db'}"
    result = run(*SIM, "sync", "--once", "--to", db, *DAY, "--allowance", "1000000")
    assert result.code == 0, result.err
    assert "1,000,000" in result.err  # the plan says the allowance it plans within


def test_a_global_option_after_the_command_and_before_it_is_one_value(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    def allowance(*args: str) -> Any:
        result = run(*args, "--format", "json")
        assert result.code == 0, result.err
        return json.loads(result.out)["objects"]["allowance"]

    after = allowance("quota", "--simulate", "-q", "--allowance", "3 access points")
    assert after == {"all": 6_000}
    three = ("--allowance", "3 access points")
    assert allowance(*three, "quota", "--simulate", *three) == after
    # typed after the command, it wins over the variable (as before it)
    monkeypatch.setenv("ASYNCWIFI_ALLOWANCE", "2000 contacts")
    assert allowance("--simulate", "quota", "--allowance", "3 access points") == after

    differ = run("--allowance", "1000", "quota", "--simulate", "--allowance", "2000")
    assert differ.code == ExitCode.USAGE
    line = _one_error(differ)
    assert "--allowance is given before 'quota' and after it, with different values" in line
    assert list(clean_env.iterdir()) == []  # nothing started, nothing written


def test_quota_is_read_by_people_hotspots_by_programs(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    quota = run("-q", "--simulate", "quota")
    assert quota.code == 0, quota.err
    assert "remaining" in quota.out
    assert not quota.out.lstrip().startswith("{")
    hotspots = run("-q", "--simulate", "hotspots", "list")
    assert json.loads(hotspots.out)


@pytest.mark.parametrize("slice_", ["90", "90s", "1m30s", "1.5m"])
def test_a_duration_takes_one_set_of_forms(
    clean_env: Path, run: Callable[..., Result], slice_: str
) -> None:
    result = run(*DRY_RUN, "--slice", slice_)
    assert result.code == 0, result.err
    assert "slices: 960 of 1 min 30 s" in result.out


def test_every_duration_option_reads_the_same_forms(parse: Callable[..., dict[str, Any]]) -> None:
    assert parse("sync", "--to", "sqlite:///x.db", "--poll", "90")["poll"] == 90.0
    assert parse("fleet dev", "--poll", "1m")["poll"] == 60.0
    assert parse("simulate", "--scroll-ttl", "2m", "--token-ttl", "1h")["scroll_ttl"] == 120.0
    assert (
        parse("fleet apply", "--config", "f.toml", "--heartbeat-timeout", "1m")["heartbeat_timeout"]
        == 60.0
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("sync", "--to", "sqlite:///x.db", "--poll", "0"), "'0' must be more than 0s"),
        (("sync", "--to", "sqlite:///x.db", "--poll", "soon"), "'soon' is not a duration"),
        (("fleet", "dev", "--poll", "0.5"), "'0.5' must be at least 1s"),
        (("webhooks", "serve", "--out", "x", "--max-age", "-1m"), "is not a duration"),
    ],
)
def test_a_bad_duration_is_one_line_that_says_the_forms(
    clean_env: Path, run: Callable[..., Result], args: tuple[str, ...], said: str
) -> None:
    result = run(*args)
    assert result.code == ExitCode.USAGE
    line = _one_error(result)
    assert said in line
    assert said.endswith("s") or "90 (seconds), 90s, 1m30s, 1h, 2d" in line


def test_an_old_name_still_works_and_says_so_once(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run(*DRY_RUN, "--daemon", "--daemon")
    assert result.code == 0, result.err
    assert _deprecations(result) == ["asyncwifi: warning: --daemon is deprecated; use --wait"]
    assert run(*DRY_RUN, "--wait").err.count("deprecated") == 0

    table = run("-q", "--simulate", "hotspots", "list", "--format", "table")
    assert table.code == 0, table.err
    assert "┃ id" in table.out  # the table, as with --format text
    assert _deprecations(table) == [
        "asyncwifi: warning: --format table is deprecated; use --format text"
    ]


def test_the_old_request_share_still_works_and_both_names_must_agree(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    db = f"sqlite:///{clean_env / 'sync.db'}"
    result = run("-q", *SIM, "sync", "--once", "--to", db, *DAY, "--budget", "0.5")
    assert result.code == 0, result.err
    assert _deprecations(result) == [
        "asyncwifi: warning: --budget is deprecated; use --request-share"
    ]
    both = run("sync", "--to", db, "--budget", "0.5", "--request-share", "0.4")
    assert both.code == ExitCode.USAGE
    assert "--budget and --request-share disagree" in _one_error(both)


def test_the_simulators_old_names_read_as_the_new(
    parse: Callable[..., dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    params = parse("simulate", "--mode", "sliding", "--json")
    assert params["rate_limit_mode"] == "sliding"
    assert params["fmt"] == "json"
    assert not any(name.startswith("deprecated_") for name in params)
    assert capsys.readouterr().err.splitlines() == [
        "asyncwifi: warning: --mode is deprecated; use --rate-limit-mode",
        "asyncwifi: warning: --json is deprecated; use --format json",
    ]
