"""``asyncwifi sync`` against a server that caps contact pages at 1,000 or at 100 (the
reference shows 100; the vendor documents 10,000): the pass exits 0 with every contact
stored once, and each refused size is paid once (the learnt size serves the whole pass)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from asyncwifi.testing import SimulatorProcess
from tests.cli.conftest import Result

SINCE, UNTIL = "2024-01-01", "2024-01-02"
CONTACTS = 1_500  # the command paces 60 requests a minute: a pass sends about 40
#: the server's largest contact page, and the sizes it refuses first (10,000, then 1,000)
CAPS = [(1_000, 1), (100, 2)]


@pytest.mark.parametrize(("cap", "refused"), CAPS)
def test_the_sync_command_stores_every_contact_under_a_page_cap(
    clean_env: Path,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    cap: int,
    refused: int,
) -> None:
    with SimulatorProcess(
        contacts_max_size=cap, events=300, contacts=CONTACTS, rate_limit_mode="off"
    ) as sim:
        for name, value in (
            ("BASE_URL", sim.base_url),
            ("CLIENT_KEY", sim.client_key),
            ("CLIENT_SECRET", sim.client_secret),
            ("ORGANIZATION", sim.organization),
            ("ALLOW_HTTP", "1"),
        ):
            monkeypatch.setenv(f"ASYNCWIFI_{name}", value)
        db = clean_env / "sync.db"
        result = run("-q", "sync", "--to", f"sqlite:///{db}", "--once",
                     "--since", SINCE, "--until", UNTIL)  # fmt: skip
        counters = asyncio.run(sim.counters())
    assert result.code == 0, result.err
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT count(*), count(DISTINCT id) FROM contacts").fetchone()
    assert rows == (CONTACTS, CONTACTS)
    assert counters["responses_by_status"]["409"] == refused
