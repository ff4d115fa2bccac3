"""How the fleet's commands reach Temporal and PostgreSQL: ``--tls``, ``--tls-cert`` and
``--tls-key`` (mTLS), ``--api-key-env`` (Temporal Cloud: the key read from the environment)
reach ``Client.connect`` the same way for ``apply``, ``worker`` and ``status``; the API key
never shows in output or errors; the worker's PostgreSQL sessions abort a transaction left
idle (a frozen worker's) so its locks do not block the next lease holder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

from temporalio.client import Client as TemporalClient
from temporalio.client import TLSConfig

from asyncwifi.cli import ExitCode
from asyncwifi.cli._command import run
from asyncwifi.fleet._activities import fleet_database_url
from tests.fleet.conftest import free_port

API_KEY = "tmprl-api-key-do-not-show-0123456789"


class Refused(RuntimeError):
    pass


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What each ``Client.connect`` was given; every connection then fails, quoting the
    key (as a server's error might)."""
    seen: list[dict[str, Any]] = []

    async def connect(target: str, **kwargs: Any) -> Any:
        seen.append({"target": target, **kwargs})
        raise Refused(f"failed client connect: bad API key {kwargs.get('api_key')}")

    monkeypatch.setattr(TemporalClient, "connect", connect)
    return seen


def fleet_toml(path: Path) -> Path:
    path.write_text(
        '[fleet]\nbase_url = "https://api.example.net"\n[[organizations]]\n'
        'organization = "org-a"\nclient_key = "k"\nclient_secret = "s"\n'
    )
    path.chmod(0o600)
    return path


def commands(tmp_path: Path) -> dict[str, list[str]]:
    config = str(fleet_toml(tmp_path / "fleet.toml"))
    return {
        "apply": ["fleet", "apply", "--config", config],
        "worker": ["fleet", "worker", "--config", config, "--to", "sqlite:///x.db"],
        "status": ["fleet", "status"],
    }


def test_tls_and_the_api_key_reach_connect_for_every_command(
    tmp_path: Path,
    connects: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CLOUD_KEY", API_KEY)
    for name, argv in commands(tmp_path).items():
        connects.clear()
        code = run([*argv, "--temporal", "ns.a1b2c.tmprl.cloud:7233", "--namespace",
                    "ns.a1b2c", "--api-key-env", "CLOUD_KEY"])  # fmt: skip
        out = capsys.readouterr()
        assert code == ExitCode.UNAVAILABLE == 69, (name, out.err)
        assert [c["target"] for c in connects] == ["ns.a1b2c.tmprl.cloud:7233"], name
        assert connects[0]["namespace"] == "ns.a1b2c"
        assert connects[0]["api_key"] == API_KEY
        assert connects[0]["tls"] is True  # TLS with an API key
        assert "cannot reach Temporal at ns.a1b2c.tmprl.cloud:7233" in out.err
        assert API_KEY not in out.out + out.err, name


def test_mtls_reads_the_certificate_and_key(
    tmp_path: Path, connects: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_bytes(b"-----BEGIN CERTIFICATE-----\ncert\n")
    key.write_bytes(b"-----BEGIN PRIVATE KEY-----\nkey\n")
    for name, argv in commands(tmp_path).items():
        connects.clear()
        code = run([*argv, "--tls-cert", str(cert), "--tls-key", str(key)])
        assert code == ExitCode.UNAVAILABLE == 69, (name, capsys.readouterr().err)
        tls = connects[0]["tls"]
        assert isinstance(tls, TLSConfig), name
        assert tls.client_cert == cert.read_bytes()
        assert tls.client_private_key == key.read_bytes()
        assert connects[0]["api_key"] is None
    connects.clear()
    assert run(commands(tmp_path)["status"] + ["--tls"]) == ExitCode.UNAVAILABLE
    assert connects[0]["tls"] is True
    connects.clear()
    assert run(commands(tmp_path)["status"]) == ExitCode.UNAVAILABLE
    assert connects[0]["tls"] is None  # plaintext to a dev server, as before


def test_bad_access_options_are_said_before_connecting(
    tmp_path: Path,
    connects: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cert = tmp_path / "client.pem"
    cert.write_bytes(b"cert")
    monkeypatch.delenv("UNSET_KEY", raising=False)
    for name, argv in commands(tmp_path).items():
        assert run([*argv, "--tls-cert", str(cert)]) == 78, name
        assert "--tls-cert and --tls-key go together" in capsys.readouterr().err
        assert run([*argv, "--api-key-env", "UNSET_KEY"]) == 78, name
        err = capsys.readouterr().err
        assert "UNSET_KEY is not set" in err
        assert err.count("\n") == 1
    assert connects == []  # nothing sent


def test_the_api_key_never_shows_against_a_real_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CLOUD_KEY", API_KEY)
    code = run(["fleet", "status", "--temporal", f"127.0.0.1:{free_port()}",
                "--api-key-env", "CLOUD_KEY"])  # fmt: skip
    out = capsys.readouterr()
    assert code == ExitCode.UNAVAILABLE == 69
    assert "cannot reach Temporal at 127.0.0.1:" in out.err
    assert API_KEY not in out.out + out.err


def test_the_worker_database_aborts_idle_transactions() -> None:
    url = "postgresql://sync@db.internal/wifi"
    assert fleet_database_url(url, 90) == url + "?idle_in_transaction_session_timeout=90000"
    assert fleet_database_url(url + "?sslmode=require", 4.5) == (
        url + "?sslmode=require&idle_in_transaction_session_timeout=4500"
    )
    own = url + "?idle_in_transaction_session_timeout=1000"
    assert fleet_database_url(own, 90) == own  # the URL's own setting kept
    assert fleet_database_url(url, None) == url
    assert fleet_database_url("sqlite:///x.db", 90) == "sqlite:///x.db"


async def test_postgresql_aborts_a_frozen_workers_transaction() -> None:
    from tests.sync.conftest import pg_lock, require_postgres

    require_postgres()
    with pg_lock(exclusive=False):  # not while a test restarts the server
        await _a_frozen_transaction_is_aborted()


async def _a_frozen_transaction_is_aborted() -> None:
    import asyncio
    import time

    import asyncpg

    from tests.sync.conftest import PG_ADMIN

    frozen = await asyncpg.connect(fleet_database_url(PG_ADMIN, 0.5))
    other = await asyncpg.connect(PG_ADMIN)
    try:
        assert await frozen.fetchval("SHOW idle_in_transaction_session_timeout") == "500ms"
        await frozen.execute("BEGIN")
        await frozen.execute("SELECT pg_advisory_xact_lock(727275)")  # then it freezes
        deadline = time.monotonic() + 10
        while not await other.fetchval("SELECT pg_try_advisory_lock(727275)"):
            assert time.monotonic() < deadline, "the frozen transaction kept its lock"
            await asyncio.sleep(0.1)
        await other.execute("SELECT pg_advisory_unlock(727275)")
        # the session ended by the server: said as a server error, a closed connection, or
        # (a loaded machine: the close seen mid-call) asyncpg's protocol state error
        ended = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError)
        with pytest.raises((*ended, OSError)):
            await frozen.execute("SELECT 1")  # the server ended its session
    finally:
        frozen.terminate()
        await other.close()
