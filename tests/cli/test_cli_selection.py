"""``asyncwifi sync --resources/--event-types`` (issue 41): a bad selection is one line,
exit 78, before any request and before the database is created; so is a bad --pii."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Result


def test_the_command_refuses_a_bad_selection_before_any_request(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run(
        "--simulate", "sync", "--to", f"sqlite:///{clean_env / 's.db'}", "--once",
        "--resources", "events,guests",
    )  # fmt: skip
    assert result.code == 78
    err = result.err.strip().splitlines()
    assert len(err) == 1
    assert "unknown resource 'guests'" in err[0]
    assert not (clean_env / "s.db").exists()


def test_the_command_refuses_a_bad_pii_policy_before_any_request(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    db = clean_env / "s.db"
    for policy, said in (("mail=hash", "unknown field 'mail'"), ("email=hash", "needs a key")):
        result = run("--simulate", "sync", "--to", f"sqlite:///{db}", "--once", "--pii", policy)
        assert result.code == 78
        err = result.err.strip().splitlines()
        assert len(err) == 1
        assert said in err[0]
    assert not db.exists()


SIM = ("--simulate", "--sim-events-per-day", "300")
DAY = ("--since", "2026-01-01", "--until", "2026-01-02")


def _pii_of(path: Path) -> set[str]:
    """Emails, phones and names (5 letters or more) of the contacts in a JSON Lines file."""
    import json

    found: set[str] = set()
    for line in path.read_text().splitlines():
        c = json.loads(line)
        found.update(v for v in (c.get("email"), c.get("phone"), c.get("phoneNumber")) if v)
        found.update(n for n in (c.get("firstName"), c.get("lastName")) if n and len(n) >= 5)
    return found


def test_contacts_export_and_events_backfill_take_the_pii_policy(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the exports wrote every record whole."""
    monkeypatch.setenv("ASYNCWIFI_PII_KEY", "a-test-key")
    whole, scrubbed = clean_env / "whole.jsonl", clean_env / "scrubbed.jsonl"
    assert run(*SIM, "contacts", "export", "--out", str(whole)).code == 0
    policy = ("--pii", "email=hash,phone=hash,name=drop")
    assert run(*SIM, "contacts", "export", "--out", str(scrubbed), *policy).code == 0
    seeded = _pii_of(whole)
    assert seeded  # the plain export holds them
    text = scrubbed.read_text()
    assert len(text.splitlines()) == len(whole.read_text().splitlines())
    assert [v for v in seeded if v in text] == []
    events = clean_env / "events.jsonl"
    assert run(*SIM, "events", "backfill", *DAY, "--out", str(events), *policy).code == 0
    assert [v for v in seeded if v in events.read_text()] == []


def test_an_export_resumed_under_another_pii_policy_is_refused(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state file records the policy (and which key hashes): before, a resume under
    another policy appended lines of another kind to the same output."""
    monkeypatch.setenv("ASYNCWIFI_PII_KEY", "a-test-key")
    out = clean_env / "contacts.jsonl"
    policy = ("--pii", "email=hash,name=drop")
    assert run(*SIM, "contacts", "export", "--out", str(out), *policy).code == 0
    assert run(*SIM, "contacts", "export", "--out", str(out), *policy).code == 0  # done
    for other in (("--pii", "email=drop"), ()):
        result = run(*SIM, "contacts", "export", "--out", str(out), *other)
        assert result.code == 65
        err = result.err.strip().splitlines()
        assert len(err) == 1
        assert "pii" in err[0]
    monkeypatch.setenv("ASYNCWIFI_PII_KEY", "another-key")  # the same words, another key
    result = run(*SIM, "contacts", "export", "--out", str(out), *policy)
    assert result.code == 65
    assert "key" in result.err
    assert "another-key" not in result.err
