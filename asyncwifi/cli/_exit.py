"""Exit statuses of the ``asyncwifi`` command, and the one-line failure that carries one.

The numbers follow BSD ``sysexits.h`` where one fits, so that shell scripts and service
managers can tell "run me again later" (75) from "fix your configuration" (78).
"""

from __future__ import annotations

import enum

__all__ = ["CliFailure", "ExitCode"]


class ExitCode(enum.IntEnum):
    """Every status ``asyncwifi`` exits with (documented in docs/guides/cli.md)."""

    #: the command did everything it was asked
    OK = 0
    #: an API or network error stopped the run; an export keeps its progress (run again)
    FAILURE = 1
    #: bad command line: an option, a date, a range, an event type, a slice size
    USAGE = 2
    #: the output and the state disagree: an output with no state file, a state file for
    #: another job, an output shorter than committed (EX_DATAERR)
    DATA = 65
    #: a service the command needs cannot be reached at start: ``sync --to`` a database
    #: that never answered, ``fleet`` without Temporal (EX_UNAVAILABLE)
    UNAVAILABLE = 69
    #: a file or database cannot be created or written: an export's output or state file,
    #: ``sync --to`` a read-only folder; a full disk (progress is saved) (EX_CANTCREAT)
    CANT_CREATE = 73
    #: the day's quota is spent (progress is saved; run the same command again after the
    #: reset it printed), or another run holds the output or the organization (EX_TEMPFAIL)
    TEMPFAIL = 75
    #: the database refuses a right the command needs: ``sync --to`` PostgreSQL as a role
    #: without CREATE on the schema (EX_NOPERM)
    NOPERM = 77
    #: missing or invalid credentials or configuration file (EX_CONFIG)
    CONFIG = 78
    #: interrupted (Ctrl-C, SIGTERM); progress is saved (``sync`` exits 0 on a stop)
    INTERRUPTED = 130


class CliFailure(Exception):
    """A failure reported as one line on stderr, with its exit status."""

    def __init__(self, message: str, code: ExitCode = ExitCode.FAILURE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
