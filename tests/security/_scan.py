"""What the security tests look for and where: an error's every face, the captured logs,
and the password put in database and Redis URLs (tests/security/test_url_passwords*.py)."""

from __future__ import annotations

import socket
import traceback

import pytest

#: the two halves of every password the URL tests use: neither may show anywhere, so a
#: piece of a password split by a parser (at a "/", "?", "#" or "@") is caught too
HEAD, TAIL = "s3cret", "pw-tail"
PASSWORD = f"{HEAD}{TAIL}"
#: what splits a password when written unescaped in a URL
SPLITTERS = ("/", "?", "#", "@")


def url_leaks(text: str) -> list[str]:
    """The pieces of the URL password found in ``text``."""
    return [piece for piece in (HEAD, TAIL) if piece in text]


def error_text(exc: BaseException) -> str:
    """Everything an exception can show: str, repr, args, the traceback with its chain,
    its attributes."""
    return "\n".join(
        [str(exc), repr(exc), repr(exc.args), *traceback.format_exception(exc)]
        + [repr(v) for v in vars(exc).values()]
    )


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    """Every captured record, formatted, with the traceback of any exception it carries."""
    return caplog.text + "\n".join(
        "".join(traceback.format_exception(r.exc_info[1]))
        for r in caplog.records
        if r.exc_info and r.exc_info[1] is not None
    )


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
