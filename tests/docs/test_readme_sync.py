"""The README's sync command, run as written: the figures the README gives beside it are the
ones it prints (issue 40: the README said 11,900 objects a month, the command printed
305,723 at the simulator's 10,000 events a day), and the event rate they assume is in the
command."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from tests.cli.conftest import asyncwifi_command

ROOT = Path(__file__).resolve().parents[2]


def test_the_readmes_sync_prints_the_plan_the_readme_gives(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(
        line
        for line in readme.splitlines()
        if line.startswith("asyncwifi --simulate") and " sync " in line
    )
    args = shlex.split(line)[1:]
    rate = args[args.index("--sim-events-per-day") + 1]
    done = subprocess.run(
        [*asyncwifi_command(), *args], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    plans = re.findall(
        r"^object plan: ([\d,]+) objects a month \(share ([\d,]+)", done.stderr, re.M
    )
    projection, share = plans[-1]  # the plan made from what the first pass measured
    assert projection != "0"
    assert f"{projection} objects" in readme
    assert f"share ({share})" in readme
    assert f"{int(rate):,} events a day" in readme.replace("\n", " ")
