"""The one table of defaults (``asyncwifi._defaults``) and the one reading of settings
(``asyncwifi._settings``): each distinctive default is written once, the owners that used to
disagree read the same value, and every entry reads arguments > environment > file."""

from __future__ import annotations

import ast
import logging
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest

import asyncwifi
from asyncwifi import _defaults as table
from asyncwifi._settings import from_environment, resolve, resolve_all
from asyncwifi.errors import ConfigurationError, ValidationError
from tests._source import parse_source

PACKAGE = Path(asyncwifi.__file__).parent

#: the table's distinctive values: one of them written as a literal anywhere else in the
#: package (the simulator aside: it plays the vendor, whose names it serves) is a second owner
DISTINCTIVE = {
    name: getattr(table, name)
    for name in (
        "LOOKBACK",
        "OBJECT_SHARE",
        "MODIFIED_FROM",
        "MODIFIED_TO",
        "HOTSPOTS_CHANGED",
        "RATE_PREFIX",
        "NONCE_PREFIX",
        "SIMULATOR_PORT",
        "WEBHOOKS_PORT",
    )
}


def _literals(path: Path) -> list[tuple[int, object]]:
    tree = parse_source(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and not isinstance(node.value, bool)
    ]


def _same(a: object, b: object) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    return isinstance(a, int | float) and isinstance(b, int | float) and a == b


def test_each_distinctive_default_is_written_once() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "testing" or rel.name == "_defaults.py":
            continue
        for line, value in _literals(path):
            for name, default in DISTINCTIVE.items():
                if _same(value, default):
                    found.append(f"{rel}:{line}: {value!r} is _defaults.{name}")
    assert found == []


def test_the_scan_finds_a_literal_written_twice(tmp_path: Path) -> None:
    """The guard above can fail: a module that writes the object share is caught."""
    module = tmp_path / "m.py"
    module.write_text("def f(share: float = 0.9, prefix: str = 'asyncwifi:rl:') -> None: ...\n")
    values = [v for _, v in _literals(module)]
    assert any(_same(v, table.OBJECT_SHARE) for v in values)
    assert any(_same(v, table.RATE_PREFIX) for v in values)


def _option(command: click.Command, name: str) -> click.Parameter:
    return next(p for p in command.params if p.name == name)


def test_the_sync_cadence_agrees_everywhere() -> None:
    from asyncwifi.cli._sync import sync_command
    from asyncwifi.engine import DEFAULT_LOOKBACK, EventFeed, LeaseKeeper
    from asyncwifi.engine._lease import LEASE_TTL
    from asyncwifi.fleet._config import Organization
    from asyncwifi.fleet._workflow import OrganizationInput
    from asyncwifi.sync import SyncOptions
    from asyncwifi.sync._options import DEFAULTS

    options = SyncOptions()
    org = Organization("o", "k", "https://x")
    # the poll: the plan's default, the fleet's, its workflow's, the event feed's
    polls = {DEFAULTS.poll, org.poll, OrganizationInput("o").poll, table.POLL_INTERVAL}
    assert polls == {table.POLL_INTERVAL}
    assert _default(EventFeed, "poll_interval") == table.POLL_INTERVAL
    assert DEFAULTS.settle == _default(EventFeed, "settle") == table.SETTLE
    assert _default(EventFeed, "lookback") == table.LOOKBACK  # a feed of one's own: the sync's
    assert {options.lookback, org.lookback, DEFAULTS.lookback, DEFAULT_LOOKBACK} == {600.0}
    assert options.lookback == table.LOOKBACK
    # the shares: requests (a day) and objects (a month), never one for the other
    assert (options.object_share, org.object_share) == (table.OBJECT_SHARE,) * 2
    assert _option(sync_command, "object_share").default == table.OBJECT_SHARE
    assert _option(sync_command, "request_share").default == table.REQUEST_SHARE
    assert org.request_share == table.REQUEST_SHARE
    # the lease, the contacts' filters
    assert _option(sync_command, "lease_ttl").default == LEASE_TTL == table.LEASE_TTL
    assert _default(LeaseKeeper, "ttl") == table.LEASE_TTL
    assert _option(sync_command, "modified_from_param").default == options.modified_from
    assert _option(sync_command, "modified_to_param").default == options.modified_to


def _default(owner: Any, name: str) -> Any:
    import inspect

    return inspect.signature(owner).parameters[name].default


def test_the_help_says_the_default_the_sync_uses() -> None:
    from asyncwifi._instant import format_duration
    from asyncwifi.cli._sync import sync_command

    helps = {p.name: getattr(p, "help", "") or "" for p in sync_command.params}
    assert f"default: {format_duration(table.POLL_INTERVAL)}]" in helps["poll"]
    assert f"default: {format_duration(table.LOOKBACK)}," in helps["lookback"]
    assert f"default: {format_duration(table.SETTLE)}," in helps["settle"]


def test_fleet_toml_defaults_are_the_syncs_and_budget_is_read_for_one_release(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from asyncwifi.fleet._config import parse_fleet_config

    org = {"organization": "o", "client_key": "k", "client_secret": "s"}
    plain = parse_fleet_config({"fleet": {"base_url": "https://x"}, "organizations": [org]})
    o = plain["o"]
    assert (o.poll, o.lookback, o.request_share, o.object_share) == (
        table.POLL_INTERVAL,
        table.LOOKBACK,
        table.REQUEST_SHARE,
        table.OBJECT_SHARE,
    )
    with caplog.at_level(logging.WARNING, logger="asyncwifi.fleet"):
        old = parse_fleet_config(
            {"fleet": {"base_url": "https://x", "budget": 0.5}, "organizations": [org]}
        )
    assert (old["o"].request_share, old["o"].budget) == (0.5, 0.5)
    said = [r.getMessage() for r in caplog.records]
    assert said == ["[fleet]: budget is deprecated; use request_share"]
    new = parse_fleet_config(
        {"fleet": {"base_url": "https://x", "request_share": 0.25}, "organizations": [org]}
    )
    assert new["o"].request_share == 0.25
    with pytest.raises(ConfigurationError, match="budget: give request_share alone"):
        parse_fleet_config(
            {
                "fleet": {"base_url": "https://x", "budget": 0.5, "request_share": 0.5},
                "organizations": [org],
            }
        )


def test_a_share_or_a_cadence_that_means_nothing_is_refused() -> None:
    from asyncwifi.engine import Budget, EventFeed
    from asyncwifi.ratelimit import Limits, Scheduler

    scheduler = Scheduler(Limits())
    with pytest.raises(ValidationError, match="within"):
        Budget(scheduler, share=True)
    assert Budget(scheduler, share=1).total == Budget(scheduler).total
    since = datetime(2024, 1, 1, tzinfo=UTC)
    for bad in (math.inf, math.nan, 0.0):
        with pytest.raises(ValidationError, match="poll_interval"):
            EventFeed(object(), since=since, poll_interval=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="settle"):
        EventFeed(object(), since=since, settle=math.inf)  # type: ignore[arg-type]


def test_one_simulator_default_set() -> None:
    from asyncwifi.cli._simulate import SimOptions
    from asyncwifi.cli._simulator_command import simulate_command
    from asyncwifi.testing import Simulator

    d = Simulator.DEFAULTS
    command = {p.name: p.default for p in simulate_command.params}
    for name in ("host", "port", "speed", "seed", "events", "contacts", "hotspots", "segments",
                 "minute_limit", "day_limit", "rate_limit_mode", "scroll_ttl", "token_ttl",
                 "contacts_max_size", "event_shape"):  # fmt: skip
        assert command[name] == getattr(d, name), name
    sim = SimOptions()
    assert (sim.seed, sim.minute_limit, sim.day_limit) == (d.seed, d.minute_limit, d.day_limit)
    # what --simulate does otherwise is named there, once
    assert (sim.speed, sim.events_per_day, sim.contacts) == (
        d.embedded_speed,
        d.embedded_events_per_day,
        d.embedded_contacts,
    )
    # two servers, two ports
    assert d.port == table.SIMULATOR_PORT != table.WEBHOOKS_PORT
    # the units are said
    scroll = next(p for p in simulate_command.params if p.name == "scroll_ttl")
    assert "default: 1m]" in (getattr(scroll, "help", "") or "")


def test_a_command_reads_the_simulators_defaults_without_loading_it() -> None:
    """``--simulate``'s options come from the table: a command that does not simulate
    starts without the simulator's modules."""
    import subprocess
    import sys

    code = "import sys, asyncwifi.cli._app; print('asyncwifi.testing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_redis_connection_has_the_tables_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """One factory: the rate store, the webhook nonces and the fleet worker's pool."""
    pytest.importorskip("redis")
    import redis.asyncio as aioredis

    from asyncwifi.fleet._clients import ClientPool
    from asyncwifi.ratelimit import RedisStore, redis_client
    from asyncwifi.webhooks import RedisDeduplicator

    made: list[dict[str, Any]] = []
    real = aioredis.Redis.from_url

    def spy(url: str, **kwargs: Any) -> Any:
        made.append(kwargs)
        return real(url, **kwargs)

    monkeypatch.setattr(aioredis.Redis, "from_url", spy)
    url = "redis://127.0.0.1:6379/0"
    redis_client(url, "test")
    RedisDeduplicator(url)
    store = ClientPool(rate_store=url)._store("a key")
    assert isinstance(store, RedisStore)
    assert store.key == RedisStore.key_name("a key") != "a key"
    assert RedisStore.for_key(url, "a key").key == store.key
    assert len(made) == 3
    for kwargs in made:
        assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == table.REDIS_TIMEOUT
    assert store.op_timeout == table.REDIS_TIMEOUT
    assert store.prefix == table.RATE_PREFIX


# -- one reading of settings: arguments > environment > file > default ---------------------


def test_resolve_reads_arguments_then_environment_then_file_then_the_default() -> None:
    layers = {"arguments": {"a": 1}, "environment": {"a": 2, "b": 2}, "file": {"a": 3, "c": 3}}
    got = resolve_all("abcd", **layers, defaults={"d": 4})  # type: ignore[arg-type]
    assert got == {"a": 1, "b": 2, "c": 3, "d": 4}
    # unset: None and "" pass to the next layer; False and 0 are said
    assert resolve("x", arguments={"x": None}, environment={"x": ""}, file={"x": 0}) == 0
    assert resolve("x", arguments={"x": False}, file={"x": True}) is False
    assert from_environment({"k": "V"}, {"V": "  "}) == {}


def test_the_command_line_reads_the_environment_over_config_toml(tmp_path: Path) -> None:
    from asyncwifi.cli._config import load_settings

    config = tmp_path / "config.toml"
    config.write_text('base_url = "https://file"\norganization = "from-file"\ntimeout = 5\n')
    config.chmod(0o600)
    env = {"ASYNCWIFI_BASE_URL": "https://env", "ASYNCWIFI_TIMEOUT": "7"}
    s = load_settings(config, env)
    assert (s.base_url, s.organization, s.timeout) == ("https://env", "from-file", 7.0)
    assert load_settings(config, {}).timeout == 5.0
    # the command's own argument (--allow-http) over the environment over the file
    config.write_text("allow_http = false\n")
    assert load_settings(config, {"ASYNCWIFI_ALLOW_HTTP": "1"}).allow_http is True
    off = {"ASYNCWIFI_ALLOW_HTTP": "0"}
    assert load_settings(config, off, arguments={"allow_http": True}).allow_http is True
    assert load_settings(config, off, arguments={"allow_http": None}).allow_http is False


def test_the_dlt_source_reads_arguments_then_environment_then_dlts_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("dlt")
    from asyncwifi import dlt as source

    files = {"sources.asyncwifi.base_url": "https://dlt", "sources.asyncwifi.organization": "d"}
    monkeypatch.setattr(source.dlt.config, "get", lambda key, *a, **k: files.get(key))
    monkeypatch.setattr(source.dlt.secrets, "get", lambda key, *a, **k: None)
    for var in ("ASYNCWIFI_BASE_URL", "ASYNCWIFI_ORGANIZATION", "ASYNCWIFI_CLIENT_SECRET"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "env-key")
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", "env-secret")
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", "https://env")
    got = source._resolve({"client_key": "arg-key"})
    assert (got["client_key"], got["client_secret"]) == ("arg-key", "env-secret")
    assert (got["base_url"], got["organization"]) == ("https://env", "d")


def test_fleet_toml_reads_the_organization_over_the_fleet_over_the_table() -> None:
    from asyncwifi.fleet._config import parse_fleet_config

    orgs = [
        {"organization": "a", "client_key": "k", "client_secret": "s", "poll": "2m"},
        {"organization": "b", "client_key": "k", "client_secret": "s"},
    ]
    config = parse_fleet_config(
        {"fleet": {"base_url": "https://x", "poll": 90}, "organizations": orgs}
    )
    assert (config["a"].poll, config["b"].poll) == (120.0, 90.0)
    assert config["b"].lookback == table.LOOKBACK


def test_sync_options_read_their_arguments_over_the_table() -> None:
    from asyncwifi.sync import SyncOptions

    assert SyncOptions(lookback=120).lookback == 120.0
    assert SyncOptions().lookback == table.LOOKBACK
    assert SyncOptions().poll_interval is None  # unset: the plan's, from the table
    with pytest.raises(ValidationError, match="object_share must be within"):
        SyncOptions(object_share=True)
