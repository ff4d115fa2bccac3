"""The house's doors (issue 44): each package is reached through its ``__init__``, the
simulator never imports the command line, and the jobs' packages import in no loop.

Read from the source (``ast``), as the rules are about what the code says: an import
inside a function counts (it runs), one under ``if TYPE_CHECKING:`` does not.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

from tests._source import parse_source

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "asyncwifi"

#: the engine's face: what a program (and every job) writes against
ENGINE = [
    "Batch",
    "Budget",
    "ContactFeed",
    "Copier",
    "CopyOptions",
    "Destination",
    "DestinationUnavailableError",
    "EventFeed",
    "LeaseLostError",
    "StateMismatchError",
    "Write",
    "open_destination",
    "snapshot",
]


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((root / "asyncwifi").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The modules ``path`` imports when it runs (not those only a type checker reads)."""
    tree = parse_source(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Name | ast.Attribute) and "TYPE_CHECKING" in ast.unparse(test):
            typing_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            yield from (s for s in subs if s in modules)
            if any(s not in modules for s in subs):
                yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def private_doors(root: Path) -> set[tuple[str, str]]:
    """Every ``asyncwifi.<package>._<module>`` imported from outside ``<package>``."""
    modules = _modules(root)
    doors = set()
    for name, path in modules.items():
        importer = name.split(".")
        for target in set(_imports(path, modules)):
            parts = target.split(".")
            if len(parts) < 3 or parts[0] != "asyncwifi" or parts[1].startswith("_"):
                continue
            if (root / "asyncwifi" / parts[1]).is_dir() and any(
                p.startswith("_") for p in parts[2:]
            ):
                inside = len(importer) > 1 and importer[1] == parts[1]
                if not inside:
                    doors.add((name, target))
    return doors


def import_loops(root: Path) -> list[list[str]]:
    """The groups of modules that import one another, directly or not (Tarjan)."""
    modules = _modules(root)
    edges = {
        m: {t for t in _imports(p, modules) if t in modules and t != m} for m, p in modules.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                loops.append(sorted(group))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return loops


def test_no_package_reaches_into_another_but_through_its_door() -> None:
    assert private_doors(ROOT) == set()


def test_the_simulator_never_imports_the_command_line() -> None:
    modules = _modules(ROOT)
    found = {
        (name, target)
        for name, path in modules.items()
        if name.startswith("asyncwifi.testing")
        for target in _imports(path, modules)
        if target == "asyncwifi.cli" or target.startswith("asyncwifi.cli.")
    }
    assert found == set()


def test_the_engine_and_its_jobs_import_in_no_loop() -> None:
    ours = ("engine", "sync", "backfill", "dlt", "fleet", "cli", "testing", "models", "webhooks")
    for group in import_loops(ROOT):
        assert not any(m.split(".")[1] in ours for m in group), group


def test_the_engines_face_is_pinned_and_each_name_says_what_it_is() -> None:
    engine = importlib.import_module("asyncwifi.engine")
    assert engine.__all__ == ENGINE == sorted(ENGINE, key=str)
    for package in ("engine", "sync", "backfill", "fleet"):
        module = importlib.import_module(f"asyncwifi.{package}")
        for name in module.__all__:
            assert (getattr(module, name).__doc__ or "").strip(), f"asyncwifi.{package}.{name}"


def test_a_name_has_one_door() -> None:
    """The engine's names are reached from the engine, not from the jobs built on it too."""
    import asyncwifi.backfill
    import asyncwifi.sync

    for job in (asyncwifi.sync, asyncwifi.backfill):
        assert not set(job.__all__) & set(ENGINE), job.__name__
        assert not any(hasattr(job, name) for name in ENGINE), job.__name__
