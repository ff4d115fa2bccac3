"""The outcome of one group's mutation run (``scripts/mutation.sh``), module by module.

    python scripts/mutation_report.py .mutation/<group> asyncwifi/<area>/<module>.py ...

Every mutant mutmut made is killed (a test failed, or it ran past the timeout), on the list
of equivalent mutants (``scripts/mutation_equivalent.txt``: no test can tell it from the
original), or a survivor: it changes what the code does and no test noticed. Survivors are
printed as entries of that list (the function and the diff on one line), ready to be
killed by a test or, when equivalent, added to the list with the reason. The exit status
is 1 when a survivor is left, else 0.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
EQUIVALENT = HERE / "mutation_equivalent.txt"
MUTMUT = Path(sys.executable).parent / "mutmut"
KILLED = {"killed", "timeout"}


@dataclass(frozen=True)
class Mutant:
    name: str
    status: str
    key: str = ""  # "function: -old +new", for survivors


def function_of(name: str) -> str:
    """``asyncwifi.engine._feeds.xǁEventFeedǁ_window__mutmut_3`` -> ``_feeds.EventFeed._window``"""
    dotted, _, _ = name.rpartition("__mutmut_")
    module, _, mangled = dotted.rpartition(".")
    if mangled.startswith("xǁ"):
        function = ".".join(mangled[2:].split("ǁ"))
    else:
        function = mangled.removeprefix("x_")
    return f"{module.rpartition('.')[2]}.{function}"


def one_line_diff(show: str) -> str:
    """The removed and the added lines of ``mutmut show``, each side on one line."""
    old: list[str] = []
    new: list[str] = []
    for line in show.splitlines():
        if line.startswith(("---", "+++", "#")):
            continue
        if line.startswith("-"):
            old.append(line[1:].strip())
        elif line.startswith("+"):
            new.append(line[1:].strip())
    return f"-{' '.join(old)} +{' '.join(new)}"


def load_equivalent(path: Path = EQUIVALENT) -> dict[str, str]:
    """Entry line -> reason (the indented lines under it)."""
    entries: dict[str, str] = {}
    key = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        if raw[0].isspace():
            entries[key] = f"{entries[key]} {raw.strip()}".strip()
        else:
            key = " ".join(raw.split())
            entries[key] = ""
    return entries


def mutmut(work: Path, *args: str) -> str:
    done = subprocess.run(
        [str(MUTMUT), *args], cwd=work, capture_output=True, text=True, check=True
    )
    return done.stdout


def mutants(work: Path) -> list[Mutant]:
    out = []
    for line in mutmut(work, "results", "--all", "true").splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if not sep:
            continue
        key = ""
        if status not in KILLED:
            key = f"{function_of(name)}: {one_line_diff(mutmut(work, 'show', name))}"
            key = " ".join(key.split())
        out.append(Mutant(name, status, key))
    return out


def main(argv: list[str]) -> int:
    work, modules = Path(argv[0]), argv[1:]
    equivalent = load_equivalent()
    found = mutants(work)
    left = 0
    for module in modules:
        prefix = module.removesuffix(".py").replace("/", ".") + "."
        mine = [m for m in found if m.name.startswith(prefix)]
        status = Counter(m.status for m in mine)
        same = [m for m in mine if m.key in equivalent]
        survivors = [m for m in mine if m.status not in KILLED and m.key not in equivalent]
        killed = status["killed"] + status["timeout"]
        print(
            f"   {module}: {len(mine)} mutants, {killed} killed"
            f" ({status['timeout']} by timeout), {len(same)} equivalent,"
            f" {len(survivors)} survived"
        )
        for m in survivors:
            print(f"     {m.key}\n         {m.status}: {m.name}")
        left += len(survivors)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
