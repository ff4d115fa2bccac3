"""What PostgreSQL's errors mean for a sync: an outage that passes, or a refusal to name.

Only a lost connection or a server shutting down passes by itself (:func:`unavailable`:
the sync waits and retries). A full disk (SQLSTATE ``53100``) is an error, not an outage
(``DestinationFullError``: a daemon waits for space, a single pass ends); a right the role
lacks (``42501``) is named with the role and how to grant it
(``DestinationPermissionError``), never a driver's traceback.
"""

from __future__ import annotations

import asyncio
import re

from asyncwifi.engine._destination import DestinationFullError, DestinationPermissionError

__all__ = ["refused", "unavailable"]

# PostgreSQL error classes that mean "not now" (08: connection exception, 57P: operator
# intervention such as a shutdown or a restart)
_TRANSIENT_STATES = ("08", "57P")
_DISK_FULL = "53100"
_NO_RIGHT = "42501"
_DENIED = re.compile(r"permission denied for (schema|table|relation|sequence|database) (\S+)")


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the server cannot be reached now (retry later)."""
    import asyncpg

    if isinstance(
        exc,
        OSError | asyncio.TimeoutError | asyncpg.InterfaceError | asyncpg.InternalClientError,
    ):
        return True
    if isinstance(exc, asyncpg.PostgresError):
        state = getattr(exc, "sqlstate", "") or ""
        return state.startswith(_TRANSIENT_STATES)
    return False


def refused(exc: BaseException, role: str, where: str) -> Exception | None:
    """The error ``exc`` stands for when it is a full disk or a missing right of ``role``
    on the database ``where``, else None."""
    state = getattr(exc, "sqlstate", None)
    if state == _DISK_FULL:
        return DestinationFullError(f"the disk of PostgreSQL at {where} is full ({exc})", where)
    if state != _NO_RIGHT:
        return None
    found = _DENIED.search(str(exc))
    if found is None:
        return DestinationPermissionError(f"role {role!r} lacks a right it needs: {exc}")
    kind, name = found.groups()
    if kind == "schema":  # the sync creates its tables there on its first run
        right, grant = f"CREATE on schema {name}", f"GRANT CREATE ON SCHEMA {name}"
    elif kind == "database":
        right, grant = f"CONNECT or CREATE on database {name}", f"GRANT CREATE ON DATABASE {name}"
    else:
        right = f"SELECT, INSERT, UPDATE and DELETE on {kind} {name}"
        grant = f"GRANT SELECT, INSERT, UPDATE, DELETE ON {name}"
    return DestinationPermissionError(
        f"role {role!r} lacks the right {right} ({exc}): {grant} TO {role}, or sync as a "
        "role that has it (the database's owner)"
    )
