"""Security: ``asyncwifi sync`` shows the password of its ``--to`` database URL or of its
``--rate-store`` / ``ASYNCWIFI_RATE_STORE`` Redis URL nowhere: not on stdout or stderr
(every logger of the process at DEBUG), not in /metrics or /healthz.

The command runs as a real process on the embedded simulator (``--simulate``): a sync into
an unreachable PostgreSQL retries until stopped, so it is killed once it said so twice.
The library's side: test_url_passwords.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from asyncwifi.cli import main
from tests.security._scan import HEAD, PASSWORD, SPLITTERS, TAIL, closed_port, url_leaks

#: the command, with a root handler printing every record of every library at DEBUG (and
#: the SDK's records through the same plain formatter, tracebacks included)
_BOOT = (
    "import logging, sys\n"
    "h = logging.StreamHandler(sys.stderr)\n"
    "h.setFormatter(logging.Formatter('%(levelname)s %(name)s %(message)s'))\n"
    "logging.getLogger().addHandler(h)\n"
    "logging.getLogger().setLevel(logging.DEBUG)\n"
    "logging.getLogger('asyncwifi').addHandler(h)\n"
    "from asyncwifi.cli import main\n"
    "main()\n"
)
_WINDOW = ["--since", "2026-01-01", "--until", "2026-01-01T01:00"]
UNREACHABLE = "the database is unreachable"


class Run:
    """``asyncwifi -vv --simulate sync ARGS`` as a process; its output, read as it comes."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        cmd = [sys.executable, "-c", _BOOT, "-vv", "--simulate", "sync", *args]
        full_env = dict(os.environ, PYTHONPATH=os.getcwd(), **(env or {}))
        self.proc = subprocess.Popen(
            cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.out: list[str] = []
        self.err: list[str] = []
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str], into: list[str]) -> None:
        for line in stream:  # appended as it comes: wait_for() reads along
            into.append(line)

    @property
    def text(self) -> str:
        return "".join(self.out) + "".join(self.err)

    def wait_for(self, what: str, count: int = 1, timeout: float = 30.0) -> bool:
        """Until ``what`` was said ``count`` times or the process ended; whether it was."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.text.count(what) >= count:
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return self.text.count(what) >= count

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for the end (killed if still running after ``timeout``); the status."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for reader in self._readers:
            reader.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return self.proc.returncode

    def kill(self) -> None:
        self.proc.kill()
        self.finish()


def test_sync_into_an_unreachable_postgres_shows_no_password() -> None:
    """A database unreachable at start is one line and exit 69 (issue 33 item 7): the line
    names the database (its host, its user), never the password; nor does anything the
    libraries logged meanwhile."""
    port, metrics_port = closed_port(), closed_port()
    url = f"postgresql://syncer:{PASSWORD}@127.0.0.1:{port}/db"
    run = Run("--to", url, "--once", *_WINDOW, "--metrics-port", str(metrics_port))
    try:
        assert run.finish() == 69, run.text
    finally:
        run.kill()
    assert "DEBUG asyncio" in run.text  # the libraries' records are there too
    assert "cannot be reached at start" in run.text
    assert f"syncer:***@127.0.0.1:{port}" in run.text  # where, without the password
    assert not url_leaks(run.text)


@pytest.mark.parametrize(
    "to",
    [
        *(f"postgresql://syncer:{HEAD}{sep}{TAIL}@127.0.0.1:{{port}}/db" for sep in SPLITTERS),
        f"syncer:{PASSWORD}@127.0.0.1:{{port}}/db",  # the scheme forgotten
    ],
    ids=[*SPLITTERS, "no scheme"],
)
def test_sync_refuses_a_database_url_it_cannot_read_without_showing_its_password(
    to: str,
) -> None:
    """An unescaped / ? # @ splits the password: asyncpg would quote a piece of it (as a
    port, a host or a query field), the repr showed the rest. Refused, unshown."""
    run = Run("--to", to.format(port=closed_port()), "--once", *_WINDOW)
    if run.wait_for(UNREACHABLE, count=2, timeout=20):
        run.kill()  # retrying instead of refusing: fine, if it shows nothing
    code = run.finish()
    assert "asyncwifi: error:" in run.text or UNREACHABLE in run.text, run.text
    assert code != 0
    assert not url_leaks(run.text), run.text


_RATE_STORES = {
    "closed port": f"redis://syncer:{PASSWORD}@127.0.0.1:{{port}}/0",
    "environment": f"redis://:{PASSWORD}@127.0.0.1:{{port}}/0",
    "wrong password": f"redis://nobody-here:{PASSWORD}@127.0.0.1:6379/0",
    "split at /": f"redis://syncer:{HEAD}/{TAIL}@127.0.0.1:6379/0",
    "split socket path": f"unix://syncer:{HEAD}/{TAIL}@{{tmp}}/none.sock",
}


@pytest.mark.parametrize("form", list(_RATE_STORES))
def test_sync_with_a_rate_store_shows_no_password(form: str, tmp_path: Path) -> None:
    """Redis unreachable or refusing the credentials: the sync goes on (a local limit, whose
    counts are the budget's too) and says so without the password; a URL it cannot read is
    refused."""
    if form == "wrong password":
        from tests.ratelimit.rlhelpers import require_redis

        require_redis()
    url = _RATE_STORES[form].format(port=closed_port(), tmp=tmp_path)
    args = ["--to", f"sqlite:///{tmp_path}/s.db", "--once", *_WINDOW]
    if form == "environment":
        run = Run(*args, env={"ASYNCWIFI_RATE_STORE": url})
    else:
        run = Run(*args, "--rate-store", url)
    code = run.finish()
    if form.startswith("split"):
        assert code == 78, run.text  # EX_CONFIG: the URL must be fixed
    else:
        assert code == 0, run.text
        assert "rate-limit store unavailable, using a conservative local limit" in run.text
    assert not url_leaks(run.text), run.text


def test_a_rate_store_that_cannot_be_used_is_reported_without_its_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without the redis package the command stops (exit 78), naming the URL unshown."""
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    url = f"redis://syncer:{PASSWORD}@cache.example:6379/0"
    code = main(
        ["--simulate", "sync", "--to", f"sqlite:///{tmp_path}/s.db", "--once", *_WINDOW,
         "--rate-store", url]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 78
    assert "redis://syncer:***@cache.example:6379/0" in captured.err
    assert not url_leaks(captured.out + captured.err)
