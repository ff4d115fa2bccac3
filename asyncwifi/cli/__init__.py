"""The ``asyncwifi`` command: exports, resources, the sync, the simulator and the webhook
receiver (the ``cli`` extra: click and rich are not in the SDK's install).

``main()`` runs the command (the console script is ``_asyncwifi_start.main``, which stops
the process at once on a signal while Python loads the package). Errors are one line on
stderr with a documented exit status (:class:`ExitCode`): 2 for a bad command line, 65/73
for output and state problems, 75 when the day's quota ran out (run again to resume), 78
for missing credentials, 130 when interrupted.
"""

from __future__ import annotations

import importlib.util
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from asyncwifi.cli._exit import ExitCode

__all__ = ["ExitCode", "main"]

#: what the command needs beyond the SDK (the ``cli`` extra)
_EXTRA = ("click", "rich")


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: run the command, print any error as one line, return the status.

    Exits the process (``SystemExit``) with that status when called with ``argv=None``.
    Without the ``cli`` extra it says how to install it (exit 78, a configuration error).
    """
    try:
        code = _run(argv)
    except KeyboardInterrupt:
        # a stop before the command's loop handles it (parsing, checking) or after it: the
        # documented line and status, never a traceback (while Python loads the command,
        # the console script's own handler ends the process: _asyncwifi_start)
        print("asyncwifi: error: interrupted", file=sys.stderr)
        code = int(ExitCode.INTERRUPTED)
    if argv is None:
        _leave_on_stop(code)
        _exit(code)
    return code


def _leave_on_stop(code: int) -> None:
    """The command is done and said so: a stop while Python finalizes (its last
    milliseconds) ends the process with the command's own status, not killed by the signal
    without a word (exit -2)."""
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()

    def leave(_signum: int, _frame: FrameType | None) -> None:
        os._exit(code)

    with contextlib.suppress(ValueError):  # not the main thread
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, leave)


def _exit(code: int) -> None:
    """End the process with ``code``. Once temporalio's runtime started (the fleet), its
    Rust threads outlive the event loop and may touch the interpreter while it finalizes:
    ``Fatal Python error: PyGILState_Release`` and exit 134, about once in 3 to 18 runs
    (temporalio/sdk-python#300; the SDK has no way to close a client or a runtime). The
    command is done by then: its output is flushed and it leaves without finalizing."""
    if "temporalio.bridge.runtime" in sys.modules:
        import logging
        import os

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _run(argv: Sequence[str] | None) -> int:
    missing = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        from asyncwifi._extras import install_hint

        print(
            f"asyncwifi: the command needs {' and '.join(missing)}: {install_hint('cli')}",
            file=sys.stderr,
        )
        return int(ExitCode.CONFIG)
    from asyncwifi.cli._command import run

    if argv is None:
        _take_stops()
    return run(argv, exit=False)


def _take_stops() -> None:
    """The command is loaded: from here a stop is its own. SIGINT raises
    ``KeyboardInterrupt`` (Python's way) and so does SIGTERM (it was a silent death), each
    ending in the one line and 130 unless the command's loop handles it first (a sync ends
    between transactions, an export saves its progress)."""
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupted)
    except ValueError:  # not the main thread: an embedding application's signals
        pass


def _interrupted(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt
