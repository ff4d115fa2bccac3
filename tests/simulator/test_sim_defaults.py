"""The simulator's one set of defaults (issue 44): ``Simulator()`` serves what
``Simulator.DEFAULTS`` says, the standalone simulator starts from the same set, and no
entry point of the testing package writes a default of its own."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

import asyncwifi.testing
from asyncwifi import Limits
from asyncwifi.testing import Simulator, SimulatorProcess
from asyncwifi.testing._process import run_simulator, serve_forever
from tests._source import parse_source

DEFAULTS = Simulator.DEFAULTS
FIELDS = {f.name for f in dataclasses.fields(DEFAULTS)}
TESTING = Path(asyncwifi.testing.__file__).parent


async def test_a_simulator_given_nothing_serves_the_defaults_over_http() -> None:
    async with Simulator() as sim, sim.client() as api:
        events = [e async for e in api.events.list(size=10_000)]
        contacts = [c async for c in api.contacts.list()]
        hotspots = await api.hotspots.list()
        segments = await api.segments.list()
        quota = api.quota
    assert sim.seed == DEFAULTS.seed
    assert len(events) == DEFAULTS.events
    assert len(contacts) == DEFAULTS.contacts
    assert len(hotspots) == DEFAULTS.hotspots
    assert len(segments) == DEFAULTS.segments
    times = sim.data.events.times
    assert DEFAULTS.events_start <= min(times)
    assert max(times) < DEFAULTS.events_end
    # the gateway's limits are the API's, as the client's own defaults are (one owner)
    seen = {name: w.limit for name, w in quota.windows.items()}
    assert seen == {"minute": DEFAULTS.minute_limit, "day": DEFAULTS.day_limit}
    client = {
        name: limit.count
        for name, limit in (("minute", Limits().minute), ("day", Limits().day))
        if limit
    }
    assert client == seen
    assert sim.scrolls.ttl == DEFAULTS.scroll_ttl
    assert sim.contacts_max_size == DEFAULTS.contacts_max_size
    assert sim.host == DEFAULTS.host


def test_the_defaults_are_one_frozen_public_set() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.seed = 7  # type: ignore[misc]
    assert asyncwifi.testing.SimulatorDefaults is type(DEFAULTS)
    # the defaults' data: a range of one's own gets events at the default data's density
    span = DEFAULTS.events_end - DEFAULTS.events_start
    assert DEFAULTS.events_for(DEFAULTS.events_start, DEFAULTS.events_end) == DEFAULTS.events
    assert DEFAULTS.events_for(0.0, 7 * 86_400.0) == round(DEFAULTS.events * 7 * 86_400.0 / span)
    assert DEFAULTS.events_for(5.0, 5.0) == 0


def test_every_entry_point_takes_the_defaults_it_shares() -> None:
    simulator = inspect.signature(Simulator).parameters
    # in a process of its own, Simulator() listens on a free port (0), not a known one
    for name in FIELDS & simulator.keys() - {"port"}:
        assert simulator[name].default == getattr(DEFAULTS, name), name
    for entry in (serve_forever, run_simulator):
        params = inspect.signature(entry).parameters
        for name in ("host", "port", "speed"):
            assert params[name].default == getattr(DEFAULTS, name), (entry.__name__, name)
    # a simulator in a child process passes only what it is given: the rest is the set's
    assert "seed" not in " ".join(SimulatorProcess().command())


def _literal_defaults(path: Path, names: set[str]) -> list[str]:
    """Parameters named like a field of the set whose default is written as a literal."""
    found = []
    for node in ast.walk(parse_source(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            pairs = list(zip(args.args[-len(args.defaults) :], args.defaults, strict=False))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
            for arg, default in pairs:
                # None: unset (the owner's); a port of 0: any free one, not a default
                unset = (
                    isinstance(default, ast.Constant)
                    and default.value in (None, 0)
                    and (default.value is None or arg.arg == "port")
                )
                if arg.arg in names and isinstance(default, ast.Constant | ast.BinOp) and not unset:
                    found.append(f"{path.name}:{node.name}({arg.arg}={ast.unparse(default)})")
    return found


def test_no_module_of_the_simulator_writes_a_default_of_the_set_again() -> None:
    # the simulator's own names for the set's fields (the gateway's limiter calls them so)
    names = FIELDS | {"minute", "day", "ttl"}
    modules = [p for p in TESTING.glob("*.py") if p.name != "_defaults.py"]
    assert [hit for path in modules for hit in _literal_defaults(path, names)] == []
