"""The ``asyncwifi`` console script, before anything of the package is loaded.

Python loads the command (the SDK, aiohttp, click, rich) for half a second, more on a busy
machine. A Ctrl-C meanwhile was a ``KeyboardInterrupt`` traceback (or lost in a library's
bare ``except:``), a SIGTERM a silent death. This module lives outside the package, since
importing anything of ``asyncwifi`` loads all of it: on import it makes both signals end
the process at once with the command's one line and status (docs/guides/cli.md) until
``asyncwifi.cli.main`` hands stops to the command. Nothing is written or sent before then.
"""

import os
import signal

__all__ = ["main"]

#: ``asyncwifi.cli.ExitCode.INTERRUPTED`` and the command's line for it (not importable yet)
_INTERRUPTED = 130
_LINE = b"asyncwifi: error: interrupted\n"


def _stop(_signum: int, _frame: object) -> None:
    os.write(2, _LINE)
    os._exit(_INTERRUPTED)  # loading only: no file is open, nothing to flush or finalize


for _signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_signum, _stop)


def main() -> None:
    """Load the command, then run it (``asyncwifi.cli.main``: it exits with its status)."""
    from asyncwifi.cli import main as command

    command()
