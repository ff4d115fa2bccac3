"""``asyncwifi fleet`` as a user runs it: ``apply`` starts a workflow per organization of
the file, keeps the running ones (sending them the file's settings: a changed ``poll``),
stops those removed; ``status`` prints one line per organization; a bad fleet.toml is one
line naming the organization and the field (exit 78); without temporalio, the hint (78)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from asyncwifi._extras import install_hint
from asyncwifi.cli._command import run
from asyncwifi.fleet._control import running_organizations
from asyncwifi.fleet._workflow import workflow_id
from tests.fleet._procs import MAIN
from tests.fleet.conftest import connect_when_healthy


def fleet_toml(path: Path, orgs: dict[str, float]) -> Path:
    lines = ["[fleet]", 'base_url = "https://api.example.net"']
    for org, poll in orgs.items():
        lines += ["[[organizations]]", f'organization = "{org}"', f'client_key = "ck-{org}"',
                  'client_secret_env = "NOT_READ_BY_APPLY"', f"poll = {poll}"]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def apply(target: str, queue: str, path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = run(["fleet", "apply", "--config", str(path), "--temporal", target,
                "--task-queue", queue])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


async def configure_signals(target: str, org: str) -> list[Any]:
    """The settings ``configure`` signals carried to ``org``'s workflow, in order."""
    client = await connect_when_healthy(target)
    history = await client.get_workflow_handle(workflow_id(org)).fetch_history()
    found = []
    for event in history.events:
        attrs = event.workflow_execution_signaled_event_attributes
        if attrs.signal_name == "configure":
            found.append(json.loads(attrs.input.payloads[0].data))
    return found


async def terminate(target: str, orgs: list[str]) -> None:
    client = await connect_when_healthy(target)
    running = await running_organizations(client)
    for org in orgs:
        if org in running:
            await client.get_workflow_handle(workflow_id(org)).terminate()


def test_apply_starts_keeps_reconfigures_and_stops(
    temporal_target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tag = uuid.uuid4().hex[:8]
    a, b, c = (f"cli-{tag}-{x}" for x in "abc")
    queue = f"fleet-cli-{tag}"  # no worker: the workflows wait for one, running
    try:
        out = apply(temporal_target, queue, fleet_toml(tmp_path / "f.toml", {a: 60, b: 60}),
                    capsys)  # fmt: skip
        assert "2 started, 0 kept running, 0 stopped" in out
        path = fleet_toml(tmp_path / "g.toml", {a: 30, c: 60})  # b removed, a's poll changed
        out = apply(temporal_target, queue, path, capsys)
        assert "1 started, 1 kept running, 1 stopped" in out
        assert f"stopped {b}" in out
        client_running = asyncio.run(_running(temporal_target))
        assert {a, c} <= client_running
        assert b not in client_running
        assert asyncio.run(configure_signals(temporal_target, a)) == [
            {"poll": 30.0, "heartbeat_timeout": 30.0, "run_for": 3600.0}
        ]
    finally:
        asyncio.run(terminate(temporal_target, [a, b, c]))


async def _running(target: str) -> set[str]:
    return await running_organizations(await connect_when_healthy(target))


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ('client_key = "k"\nclient_secret = "s"\npoll = "soon"', "organization 'org-x': poll:"),
        ('client_secret = "s"', "organization 'org-x': client_key: missing"),
        ('client_key = "k"\nclient_secret = "s"\nbudget = 2', "organization 'org-x': budget:"),
        (
            'client_key = "k"\nclient_secret = "s"\nallowance = "many"',
            "organization 'org-x': allowance:",
        ),
        (
            'client_key = "k"\nclient_secret = "s"\nobject_share = 2',
            "organization 'org-x': object_share:",
        ),
    ],
)
def test_a_bad_fleet_toml_is_one_line_naming_the_organization_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, named: str
) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(
        '[fleet]\nbase_url = "https://api.example.net"\n'
        f'[[organizations]]\norganization = "org-x"\n{entry}\n'
    )
    for command in ("apply", "worker"):
        extra = ["--to", "sqlite:///x.db"] if command == "worker" else []
        code = run(["fleet", command, "--config", str(path), *extra])
        err = capsys.readouterr().err
        assert code == 78
        assert err.count("\n") == 1, err
        assert named in err
        assert '"s"' not in err  # never a value


def test_without_temporalio_the_hint(tmp_path: Path) -> None:
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'temporalio' or name.startswith('temporalio.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import importlib.util\n"
        "importlib.util.find_spec = lambda name, *a: None if name.startswith('temporalio') "
        "else _find(name, *a)\n"
    )
    script = "import importlib.util\n_find = importlib.util.find_spec\n" + blocker + MAIN
    for args in (["status"], ["apply", "--config", "f.toml"], ["dev"]):
        done = subprocess.run(
            [sys.executable, "-c", script, "fleet", *args],
            capture_output=True, text=True, cwd=tmp_path, timeout=60,
        )  # fmt: skip
        assert done.returncode == 78, done.stderr
        assert install_hint("fleet") in done.stderr
        assert done.stderr.count("\n") == 1
