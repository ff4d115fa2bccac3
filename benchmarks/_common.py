"""Helpers shared by the benchmarks (not a benchmark).

A simulator in its own process with the gateway's limit lifted, a client pointed at it with
the client's limit lifted too, the hand-written baseline's login, the machine's load, and a
child process whose peak RSS is its own. ``backfill.py`` and ``sync.py`` also run the
``asyncwifi`` command itself (:func:`run_command`), from this checkout and from a temporary
``git worktree`` of another commit (:func:`checkouts`, their ``--before REF``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

__all__ = [
    "CREDENTIALS",
    "Checkout",
    "checkouts",
    "hand_login",
    "load_line",
    "median",
    "open_client",
    "run_child",
    "run_command",
    "simulator",
]

#: the repository this script belongs to (the "after" side of ``--before``)
ROOT = Path(__file__).resolve().parents[1]

#: what a child needs of a running simulator
CREDENTIALS = ("base_url", "client_key", "client_secret", "organization")


def load_line() -> str:
    """The load average and core count: a busy machine explains noisy figures."""
    one, five, fifteen = os.getloadavg()
    return (
        f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores; "
        f"Python {sys.version.split()[0]}"
    )


def median(values: Sequence[float]) -> float:
    """The median (the figures reported are medians of repeated runs)."""
    return statistics.median(values)


@contextlib.contextmanager
def simulator(**options: Any) -> Iterator[dict[str, Any]]:
    """A simulator in a separate process, gateway limit off; yields its credentials."""
    from asyncwifi.testing import SimulatorProcess

    options.setdefault("rate_limit_mode", "off")
    options.setdefault("startup_timeout", 300)
    with SimulatorProcess(**options) as sim:
        yield {k: sim.info[k] for k in CREDENTIALS}


def open_client(info: dict[str, Any], **options: Any) -> Any:
    """An asyncwifi Client of the simulator ``info`` describes, with no client-side limit."""
    from asyncwifi import Client, Limits

    options.setdefault("limits", Limits(minute=None, day=None))
    return Client(
        info["client_key"],
        info["client_secret"],
        base_url=info["base_url"],
        organization=info["organization"],
        allow_http=True,
        **options,
    )


async def hand_login(session: Any, info: dict[str, Any]) -> dict[str, str]:
    """What a user writes by hand: log in once (spec §4.1), keep the Bearer header."""
    async with session.post(
        info["base_url"] + "/v1/sts/login/services",
        json={"clientKey": info["client_key"], "clientSecret": info["client_secret"]},
    ) as resp:
        resp.raise_for_status()
        token = json.loads(await resp.read())["token"]
    return {"Authorization": f"Bearer {token}", "Accept": "application/json"}


def run_child(args: Sequence[str]) -> dict[str, Any]:
    """Run ``python <args>`` and return the JSON line it prints, plus its own peak RSS.

    The peak comes from ``os.wait4`` (the child's ``ru_maxrss``, KiB on Linux), so each
    figure is one consumer's alone, not the parent's or a sibling's.
    """
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"child {args[1:3]} failed ({proc.returncode})")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    return result


# -- the command itself, from this checkout and from another commit ---------------------------


@dataclass(frozen=True)
class Checkout:
    """A tree whose ``asyncwifi`` package a command child imports (``PYTHONPATH``)."""

    #: ``after (ad6c411+changes)``, ``before (main = 1a2b3c4)``
    label: str
    root: Path


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout.strip()


def _this_checkout() -> Checkout:
    head = _git("rev-parse", "--short", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "asyncwifi")
    return Checkout(f"after ({head}{'+changes' if dirty else ''})", ROOT)


@contextlib.contextmanager
def _worktree(ref: str) -> Iterator[Checkout]:
    """A temporary detached ``git worktree`` of ``ref``, removed on exit."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        raise SystemExit(f"--before {ref}: not a commit in {ROOT} (git rev-parse --verify)")
    sha = found.stdout.strip()
    path = Path(tempfile.mkdtemp(prefix="asyncwifi-before-"))
    _git("worktree", "add", "--detach", "--quiet", str(path), sha)
    try:
        short = sha[:7]
        yield Checkout(f"before ({ref if ref.startswith(short) else f'{ref} = {short}'})", path)
    finally:
        _git("worktree", "remove", "--force", str(path))


@contextlib.contextmanager
def checkouts(before: str | None) -> Iterator[list[Checkout]]:
    """This checkout ("after"), and with ``before`` a worktree of that commit ("before")."""
    with contextlib.ExitStack() as stack:
        found = [_this_checkout()]
        if before is not None:
            found.append(stack.enter_context(_worktree(before)))
        yield found


#: The command child: ``asyncwifi``'s console script (``asyncwifi.cli.main``, what the
#: ``asyncwifi`` entry point runs), from the tree in ``PYTHONPATH``, which it checks. With
#: ``ASYNCWIFI_BENCH_LIFT=1`` the client's own limit is lifted as the simulator's is (its
#: default is the documented 60 requests a minute, and the command has no option for it):
#: else a 1,000,000-event run waits a minute on the quota and measures the quota.
_COMMAND = """\
import os, sys
import asyncwifi
root = os.path.realpath(os.environ["ASYNCWIFI_BENCH_ROOT"])
if not os.path.realpath(asyncwifi.__file__).startswith(root + os.sep):
    sys.exit(f"benchmark: asyncwifi imported from {asyncwifi.__file__}, not from {root}")
if os.environ.get("ASYNCWIFI_BENCH_LIFT") == "1":
    from asyncwifi import Client, Limits
    init = Client.__init__
    import dataclasses
    def lifted(self, *args, **kwargs):
        given = kwargs.get("limits")  # the command's own (its --on-exhausted...), lifted
        if given is None:
            kwargs["limits"] = Limits(minute=None, day=None)
        else:
            kwargs["limits"] = dataclasses.replace(given, minute=None, day=None)
        init(self, *args, **kwargs)
    Client.__init__ = lifted
from asyncwifi.cli import main
main()
"""


def _drain(fd: int, sink: Any) -> None:
    """Read a pseudo-terminal until its child side is closed."""
    while True:
        try:
            chunk = os.read(fd, 65_536)
        except OSError:  # EIO: every child side closed
            return
        if not chunk:
            return
        sink.write(chunk)


def run_command(
    checkout: Checkout,
    args: Sequence[str],
    info: dict[str, Any],
    workdir: Path,
    *,
    lift: bool = True,
    tty: bool = False,
) -> dict[str, Any]:
    """Run ``asyncwifi ARGS`` from ``checkout`` against the simulator ``info`` describes.

    The credentials come from the environment as a user's do (``ASYNCWIFI_*``, plain http
    allowed; no configuration file). stderr (the progress) goes to a file, or with ``tty``
    through a pseudo-terminal (the live display a user at a terminal sees). Returns the
    wall time from start to exit (interpreter and imports included: what the user waits),
    the exit status and the child's own peak RSS (``os.wait4``).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASYNCWIFI_", "PYTHON"))}
    env.update(
        ASYNCWIFI_CLIENT_KEY=info["client_key"],
        ASYNCWIFI_CLIENT_SECRET=info["client_secret"],
        ASYNCWIFI_BASE_URL=info["base_url"],
        ASYNCWIFI_ORGANIZATION=info["organization"],
        ASYNCWIFI_ALLOW_HTTP="1",
        XDG_CONFIG_HOME=str(workdir),  # no ~/.config/asyncwifi/config.toml
        PYTHONPATH=str(checkout.root),
        ASYNCWIFI_BENCH_ROOT=str(checkout.root),
        ASYNCWIFI_BENCH_LIFT="1" if lift else "0",
    )
    log = workdir / f"stderr-{time.monotonic_ns()}.txt"
    cmd = [sys.executable, "-c", _COMMAND, *args]
    with log.open("wb") as sink:
        reader: threading.Thread | None = None
        if tty:
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            began = time.perf_counter()
            proc = subprocess.Popen(
                cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=slave,
            )  # fmt: skip
            os.close(slave)
            reader = threading.Thread(target=_drain, args=(master, sink), daemon=True)
            reader.start()
        else:
            began = time.perf_counter()
            proc = subprocess.Popen(
                cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=sink,
            )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        if reader is not None:
            reader.join(5)
            os.close(master)
    stderr = log.read_text(errors="replace")
    log.unlink()
    return {
        "seconds": seconds,
        "status": proc.returncode,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # Linux: KiB
        "stderr": stderr,
    }
