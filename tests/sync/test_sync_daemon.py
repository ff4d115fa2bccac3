"""``asyncwifi sync`` as a daemon: /healthz and Prometheus metrics while it runs, and a
SIGTERM stops it between transactions with exit 0; bad arguments are refused up front."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asyncwifi.cli import main
from tests.sync.conftest import free_port, http_get


def test_daemon_serves_health_and_metrics_and_stops_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    port = free_port()
    cmd = [
        sys.executable, "-c", "from asyncwifi.cli import main; main()",
        "--simulate", "--sim-speed", "200", "--sim-seed", "3",
        "sync", "--to", f"sqlite:///{db}", "--since", "2026-01-01", "--until", "2026-01-02",
        "--metrics-port", str(port), "--poll", "10s", "--refresh-every", "30m",
        "--log-format", "json",
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        status, metrics = 0, ""
        while time.monotonic() < deadline:
            status, _ = http_get(f"http://127.0.0.1:{port}/healthz")
            if status == 200:
                _, metrics = http_get(f"http://127.0.0.1:{port}/metrics")
                if 'asyncwifi_sync_rows_total{table="events"} 10000.0' in metrics:
                    break
            time.sleep(0.2)
        assert status == 200
        assert 'asyncwifi_sync_rows_total{table="events"} 10000.0' in metrics
        assert "asyncwifi_sync_quota_remaining_day" in metrics
        assert "asyncwifi_sync_event_lag_seconds" in metrics
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "stopping after the transaction in progress" in err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 10_000


def test_bad_arguments_are_refused_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--simulate", "sync", "--to", "mysql://x/y", "--once"])
    assert code == 2
    assert "sqlite:///PATH or postgresql://" in capsys.readouterr().err
    code = main(["sync", "--to", f"sqlite:///{tmp_path}/x.db", "--since", "2026-02-01",
                 "--until", "2026-01-01", "--once"])  # fmt: skip
    assert code == 2
    assert not (tmp_path / "x.db").exists()
    code = main(["--simulate", "sync", "--to", f"sqlite:///{tmp_path}/x.db", "--once",
                 "--rate-store", "http://127.0.0.1:6379"])  # fmt: skip
    assert code == 2
    assert "redis://" in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


def test_rate_store_shares_the_limiter_and_the_budget_in_redis(tmp_path: Path) -> None:
    from asyncwifi.ratelimit import RedisStore, Scheduler
    from asyncwifi.ratelimit._redis import key_name
    from asyncwifi.testing._util import hex_id
    from tests.ratelimit.rlhelpers import require_redis

    require_redis()
    import redis

    seed = 4242
    name = key_name(f"ck_{hex_id(seed, 0xC1)}")  # the simulated key of this seed
    conn = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    for stale in conn.scan_iter(f"asyncwifi:*{{{name}}}*"):
        conn.delete(stale)
    try:
        code = main(["--simulate", "--sim-seed", str(seed), "sync",
                     "--to", f"sqlite:///{tmp_path}/r.db", "--since", "2026-01-01",
                     "--until", "2026-01-02", "--once",
                     "--rate-store", "redis://127.0.0.1:6379/0"])  # fmt: skip
        assert code == 0
        # the budget has no counts of its own: the limiter's admission log of the key, in
        # Redis, tagged by resource, is what every process reads
        assert not list(conn.scan_iter(f"asyncwifi:budget:*{{{name}}}*"))

        async def read() -> dict[str, int]:
            store = RedisStore("redis://127.0.0.1:6379/0", key=name)
            async with Scheduler(store=store) as scheduler:
                return await scheduler.used()

        spent = asyncio.run(read())
        assert spent["events"] >= 1
        assert {"events", "contacts", "hotspots", "segments"} <= set(spent)
    finally:
        for key in conn.scan_iter(f"asyncwifi:*{{{name}}}*"):
            conn.delete(key)
        conn.close()
