"""Which destination a database URL names: the one place that knows every backend (imported
lazily, so that SQLite needs no PostgreSQL driver)."""

from __future__ import annotations

from asyncwifi._auth import redact_url
from asyncwifi.engine._destination import Destination
from asyncwifi.errors import ValidationError

__all__ = ["open_destination"]


def open_destination(
    url: str,
    *,
    organization: str | None = None,
    writers: int = 2,
    max_connections: int | None = None,
) -> Destination:
    """The destination for ``sqlite:///PATH`` or ``postgresql://...`` (not connected yet),
    reading and writing ``organization``'s rows (none: a ``Syncer`` writes its client's);
    ``writers``: PostgreSQL connections loading event batches side by side;
    ``max_connections``: the most PostgreSQL connections open at once, views included."""
    if url.startswith("sqlite:///"):
        from asyncwifi.engine._sqlite import SqliteDestination

        path = url[len("sqlite:///") :]
        if not path:
            raise ValidationError("sqlite:///PATH needs a path")
        return SqliteDestination(path, organization=organization)
    if url.startswith(("postgresql://", "postgres://")):
        from asyncwifi.engine._postgres import PostgresDestination

        return PostgresDestination(
            url, organization=organization, writers=writers, max_connections=max_connections
        )
    raise ValidationError(
        "the database URL must be sqlite:///PATH or postgresql://USER@HOST/DB, got "
        f"{redact_url(url)!r}"
    )
