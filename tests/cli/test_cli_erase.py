"""``asyncwifi contacts erase CID... --to URL`` (issue 41): a contact synced into a mirror
is deleted upstream and erased from it (row, events, a suppression recorded), said as JSON
and a line per mirror; bad ids, an unreadable key file and a wrong URL are one line, with
the CLI's statuses, before any request and before the database is created."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Result

SIM = ("--simulate", "--sim-events-per-day", "300")
DAY = ("--since", "2026-01-01", "--until", "2026-01-02")


def test_erase_removes_a_synced_contact_from_the_mirror(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: no such command."""
    monkeypatch.setenv("ASYNCWIFI_PII_KEY", "a-test-key")
    db = clean_env / "mirror.db"
    assert run(*SIM, "sync", "--to", f"sqlite:///{db}", "--once", *DAY).code == 0
    with sqlite3.connect(db) as conn:
        cid, email = conn.execute(
            "SELECT c.id, c.email FROM contacts c JOIN events e ON e.customer_id = c.id "
            "WHERE c.email IS NOT NULL LIMIT 1"
        ).fetchone()
    result = run(*SIM, "contacts", "erase", cid, "--to", f"sqlite:///{db}", "--yes")
    assert result.code == 0, result.err
    said = json.loads(result.out)
    assert said["upstream"] == {cid: "deleted"}
    assert said["suppression"] == "hmac-sha256"
    mirror = said["erased"]
    assert mirror["contacts"] == 1
    assert mirror["events"] > 0
    assert "1 contact" in result.err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM contacts WHERE id = ?", (cid,)).fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM events WHERE customer_id = ?", (cid,)
        ).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM sync_suppressions").fetchone()[0] >= 2
    data = db.read_bytes()
    assert cid.encode() not in data
    assert email.encode() not in data


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("a b",), 2, "not a contact id"),
        (("x/y",), 2, "not a contact id"),
        (("abc", "--pii-key-file", "/nonexistent/key"), 78, "cannot read the key file"),
        (("abc", "--to", "mysql://x"), 2, "must be sqlite:///PATH or postgresql://"),
    ],
)
def test_erase_refuses_bad_input_before_any_request(
    clean_env: Path, run: Callable[..., Result], args: tuple[str, ...], code: int, said: str
) -> None:
    db = clean_env / "mirror.db"
    to = () if "--to" in args else ("--to", f"sqlite:///{db}")
    result = run(*SIM, "contacts", "erase", *args, *to, "--yes")
    assert result.code == code
    err = result.err.strip().splitlines()
    assert len(err) == 1
    assert said in err[0]
    assert not db.exists()


def test_sync_retention_is_a_duration_and_purges(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    """``sync --retention DURATION`` (the CLI's one duration type); before: no such option."""
    bad = run(*SIM, "sync", "--to", f"sqlite:///{clean_env / 'b.db'}", "--once", "--retention", "0")
    assert bad.code == 2
    assert len(bad.err.strip().splitlines()) == 1
    assert "more than 0s" in bad.err
    counts = []
    for name, retention in (("all.db", "5000d"), ("short.db", "1s")):
        db = clean_env / name
        args = ("--retention", retention, "--retention-by", "creation")
        assert run(*SIM, "sync", "--to", f"sqlite:///{db}", "--once", *DAY, *args).code == 0
        with sqlite3.connect(db) as conn:
            counts.append(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    assert counts[0] > 0
    assert counts[1] < counts[0]
