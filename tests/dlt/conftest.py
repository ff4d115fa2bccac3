"""Fixtures of the dlt source's tests: dlt's files under tmp_path, a DuckDB pipeline, and
helpers to run it from the simulator's event loop and to read what it loaded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def dlt_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """dlt's data, pipelines and settings under tmp_path: nothing lands in the home dir."""
    monkeypatch.setenv("DLT_DATA_DIR", str(tmp_path / "dlt-data"))
    monkeypatch.setenv("RUNTIME__DLTHUB_TELEMETRY", "false")
    monkeypatch.chdir(tmp_path)  # dlt reads ./.dlt/*.toml
    for name in ("CLIENT_KEY", "CLIENT_SECRET", "BASE_URL", "ORGANIZATION", "ALLOW_HTTP"):
        monkeypatch.delenv(f"ASYNCWIFI_{name}", raising=False)
        monkeypatch.delenv(f"SOURCES__ASYNCWIFI__{name}", raising=False)
    return tmp_path


def pipeline(home: Path, name: str = "asyncwifi_test") -> Any:
    """A pipeline into ``home/warehouse.duckdb``, dataset ``wifi``."""
    import dlt

    return dlt.pipeline(
        pipeline_name=name,
        destination=dlt.destinations.duckdb(str(home / "warehouse.duckdb")),
        dataset_name="wifi",
        pipelines_dir=str(home / "pipelines"),
    )


#: real seconds a pipeline run may take before the test fails
DEADLINE = 60.0


async def run(target: Any, source: Any) -> dict[str, int]:
    """``target.run(source)`` in a thread (it blocks; the simulator serves on this loop);
    the rows it extracted, by table."""
    await asyncio.wait_for(asyncio.to_thread(target.run, source), DEADLINE)
    counts: dict[str, int] = target.last_trace.last_normalize_info.row_counts
    return counts


def rows(home: Path, sql: str) -> list[tuple[Any, ...]]:
    """What ``sql`` reads from the warehouse."""
    import duckdb

    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as db:
        return db.execute(sql).fetchall()


def count(home: Path, sql: str) -> int:
    """The one number ``sql`` reads from the warehouse."""
    (row,) = rows(home, sql)
    return int(row[0])


def event_ids(home: Path) -> list[str]:
    """Every id of the events table, one per row."""
    return [str(r[0]) for r in rows(home, "select id from wifi.events")]
