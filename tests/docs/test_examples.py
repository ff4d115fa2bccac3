"""Every ```python block of README.md and docs/**/*.md runs, as written, against a simulator.

A block runs as a script (``__name__ == "__main__"``) in a scratch directory. Blocks that
open ``Client.from_env()`` find the environment pointed at a simulator in a child process
(what ``asyncwifi simulate`` tells a user to export); blocks that define ``async def
test_...(simulator)`` get those tests run with a started simulator, as the pytest plugin
would; blocks that talk to Redis need it (``redis_url`` skips, or fails under
``ASYNCWIFI_REQUIRE_REDIS=1``). No example can rot without this test failing.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import ScaledClock
from asyncwifi.testing import Simulator, SimulatorProcess

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def examples() -> list[Any]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            name = f"{page.relative_to(ROOT)}:{line}"
            found.append(pytest.param(name, match.group(1), id=name))
    return found


EXAMPLES = examples()


def test_the_docs_have_examples() -> None:
    names = [param.values[0] for param in EXAMPLES]
    assert any(name.startswith("README.md:") for name in names)
    assert len(names) >= 10


@pytest.fixture(scope="module")
def served() -> Iterator[SimulatorProcess]:
    with SimulatorProcess(speed=100, events=2_000) as proc:
        yield proc


def _run_tests(namespace: dict[str, Any]) -> int:
    """Run the block's ``async def test_*`` functions with the plugin's fixtures."""
    tests = [
        fn
        for name, fn in namespace.items()
        if name.startswith("test_") and inspect.iscoroutinefunction(fn)
    ]

    async def run(fn: Any) -> None:
        wanted = inspect.signature(fn).parameters
        assert set(wanted) <= {"simulator"}, f"{fn.__name__} needs an unknown fixture"
        async with Simulator(clock=ScaledClock(100)) as sim:
            await fn(**({"simulator": sim} if "simulator" in wanted else {}))

    for fn in tests:
        asyncio.run(run(fn))
    return len(tests)


@pytest.mark.parametrize(("name", "code"), EXAMPLES)
def test_example_runs_as_written(
    name: str,
    code: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    if "redis://" in code:
        request.getfixturevalue("redis_url")
    if "from_env" in code:
        served: SimulatorProcess = request.getfixturevalue("served")
        monkeypatch.setenv("ASYNCWIFI_BASE_URL", served.base_url)
        monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", served.client_key)
        monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", served.client_secret)
        monkeypatch.setenv("ASYNCWIFI_ORGANIZATION", served.organization)
        monkeypatch.setenv("ASYNCWIFI_ALLOW_HTTP", "1")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, name, "exec"), namespace)
    for plugin in namespace.get("pytest_plugins", []):
        importlib.import_module(plugin)
    _run_tests(namespace)


def test_the_readme_is_a_front_door() -> None:
    """One screen to a first call: install from source, CI's own test command, the main job,
    links that resolve, and no install line for a package that is not published."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = next(line for line in ci.splitlines() if line.startswith("python -m pytest"))
    assert f"\n{test_command}\n" in readme
    # what CI installs is what the README says to install: the test tools (dev, the docs
    # tools included) and Prism, the contract tests' server (issue 40)
    install = next(
        line for line in ci.splitlines() if line.startswith("python -m pip") and " -e " in line
    )
    extras = re.search(r'-e "(\.\[[a-z,]+\])"', install)
    assert extras is not None
    assert f'pip install -e "{extras.group(1)}"' in readme
    prism = next(line for line in ci.splitlines() if line.startswith("npm install"))
    assert f"\n{prism}\n" in readme
    assert "asyncwifi --simulate events backfill" in readme
    assert not re.search(r"pip install asyncwifi\b(?!-)", readme)
    assert len(readme.splitlines()) < 120
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme):
        assert (ROOT / target).exists(), target


def test_every_spec_citation_in_the_code_resolves() -> None:
    """ "spec §N" names a section of docs/reference/api.md; "gateway.md" exists there too."""
    reference = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", reference, re.MULTILINE))
    cited: set[str] = set()
    for source in (ROOT / "asyncwifi").rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        cited.update(re.findall(r"spec §(\d+(?:\.\d+)?)", text))
    missing = {c for c in cited if c not in sections and c.split(".")[0] not in sections}
    assert cited
    assert not missing
    assert (ROOT / "docs" / "reference" / "gateway.md").exists()
    assert (ROOT / "docs" / "reference" / "observed.md").exists()


def test_the_exit_status_table_lists_every_status() -> None:
    from asyncwifi.cli import ExitCode

    page = (ROOT / "docs" / "guides" / "cli.md").read_text(encoding="utf-8")
    documented = {int(n) for n in re.findall(r"^\| (\d+) \|", page, re.MULTILINE)}
    assert documented == {int(code) for code in ExitCode}


def test_the_python_reference_shows_every_resource_and_links_its_roles() -> None:
    """The reference renders the resource namespaces a client reaches (``api.hotspots``...),
    and a griffe extension turns the docstrings' reST roles into links (issue 34)."""
    reference = (ROOT / "docs" / "reference" / "python.md").read_text(encoding="utf-8")
    for resource in ("Contacts", "Hotspots", "Segments", "Events"):
        assert f"._{resource.lower()}.{resource}\n" in reference
    import mkdocs_griffe

    text = "See :class:`~asyncwifi.sync.Syncer` and :meth:`!nothing`."
    linked = mkdocs_griffe.ROLE.sub(lambda m: f"[{m.group(2)}]", text)
    assert linked == "See [asyncwifi.sync.Syncer] and [nothing]."
