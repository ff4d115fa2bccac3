"""``asyncwifi fleet dev`` as a user runs it in a terminal: it prints its banner, rows
arrive, and Ctrl-C (SIGINT to the whole process group) ends it with exit status 0 within a
few seconds: the worker first, then the Temporal dev server, no ``temporal`` process left
behind (the server runs in a session of its own, so it is not killed first)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from tests.fleet._procs import MAIN
from tests.fleet.conftest import free_port


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def rows_arrived(database: Path) -> bool:
    """Both organizations have events in the database."""
    import sqlite3

    if not database.exists():
        return False
    with sqlite3.connect(database) as conn:
        try:
            counts = conn.execute("SELECT count(*) FROM events GROUP BY organization_id").fetchall()
        except sqlite3.OperationalError:  # not created yet
            return False
    return len(counts) == 2


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_ctrl_c_ends_fleet_dev_cleanly(temporal_target: str, tmp_path: Path) -> None:
    database = tmp_path / "fleet.db"
    port = free_port()
    argv = [sys.executable, "-c", MAIN, "fleet", "dev", "--orgs", "2", "--poll", "1",
            "--to", f"sqlite:///{database}", "--port", str(port),
            "--ui-port", str(free_port())]  # fmt: skip
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        # a terminal's process group of its own: Ctrl-C reaches every process in it
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, process_group=0)
    servers: set[int] = set()  # the dev server, in a session of its own
    try:
        deadline = time.monotonic() + 40
        while "Ctrl-C to stop" not in out.read_text():
            assert proc.poll() is None, err.read_text()[-3000:]
            assert time.monotonic() < deadline, err.read_text()[-3000:]
            time.sleep(0.1)
        banner = out.read_text()
        assert f"Temporal: 127.0.0.1:{port}" in banner
        assert f"asyncwifi fleet status --temporal 127.0.0.1:{port}" in banner
        servers |= children(proc.pid)
        assert servers, "no dev server child"

        while not rows_arrived(database):
            assert proc.poll() is None, err.read_text()[-3000:]
            assert time.monotonic() < deadline, "no rows arrived"
            time.sleep(0.2)
        stopped = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in its terminal
        code = proc.wait(15)
        took = time.monotonic() - stopped
        assert code == 0, err.read_text()[-3000:]
        assert took < 5.0, f"Ctrl-C took {took:.1f} s"
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in servers):
            assert time.monotonic() < deadline, "a temporal process was left behind"
            time.sleep(0.05)
        errors = err.read_text()
        assert "Traceback" not in errors, errors[-3000:]
        assert "retry" not in errors.lower(), errors[-3000:]  # no activity result to a dead server
    finally:  # whatever the test found: nothing of it left running
        servers |= children(proc.pid) if proc.poll() is None else set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid in servers:  # not in the killed group: its own session
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
