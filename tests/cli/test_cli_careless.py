"""A careless user: every bad input gets its documented status, one line, no traceback,
and nothing half-written (no state file, no output, no request)."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from asyncwifi.cli import ExitCode
from tests.cli.conftest import Result
from tests.cli.test_cli_errors import BACKFILL, one_line_error
from tests.cli.test_cli_simulate import command

SIM_DAY = ("--simulate", "-q", "events", "backfill", "--since", "2026-01-01", "--until")


def no_traceback(result: Result) -> str:
    assert "Traceback" not in result.err + result.out
    return one_line_error(result)


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- files that cannot be created or used ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--out", "/proc/x.jsonl"), "/proc/x.jsonl"),
        (("--out", "e.jsonl", "--state", "/proc/x.state"), "/proc/x.state"),
        (("--out", "no/such/dir/e.jsonl"), "no/such/dir/e.jsonl"),
        (("--out", "."), "."),
        (("--out", "/dev/full"), "/dev/full"),
    ],
)
def test_files_that_cannot_be_created_exit_73_naming_them(
    clean_env: Path, run: Callable[..., Result], args: tuple[str, ...], named: str
) -> None:
    full_state = Path("/dev/full.state")
    had_full_state = full_state.exists()
    result = run(*SIM_DAY, "2026-01-02", *args)
    assert result.code == ExitCode.CANT_CREATE == 73
    assert named in no_traceback(result)
    assert files_in(clean_env) == []
    assert full_state.exists() == had_full_state
    assert not Path("/proc/x.state").exists()


def test_contacts_export_to_a_file_that_cannot_be_created_exits_73(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--simulate", "contacts", "export", "--out", "/proc/x.jsonl")
    assert result.code == ExitCode.CANT_CREATE
    assert "/proc/x.jsonl" in no_traceback(result)
    assert files_in(clean_env) == []


@pytest.mark.parametrize("with_output", [False, True])
@pytest.mark.parametrize(
    "garbage",
    [b"this is not a database\n" * 100, b"SQLite format 3\x00" + b"garbage" * 10],
    ids=["text", "sqlite-header"],
)
def test_a_garbage_state_file_is_corrupt_not_missing(
    clean_env: Path, run: Callable[..., Result], with_output: bool, garbage: bytes
) -> None:
    (clean_env / "e.jsonl.state").write_bytes(garbage)
    if with_output:
        (clean_env / "e.jsonl").write_text('{"id": "precious"}\n')
    before = {p.name: p.read_bytes() for p in clean_env.iterdir()}
    result = run(*SIM_DAY, "2026-01-02", "--out", "e.jsonl")
    assert result.code == ExitCode.DATA == 65
    line = no_traceback(result)
    assert "e.jsonl.state is corrupt" in line
    assert "no state file" not in line
    assert {p.name: p.read_bytes() for p in clean_env.iterdir()} == before
    contacts = run("--simulate", "-q", "contacts", "export", "--out", "e.jsonl")
    assert contacts.code == ExitCode.DATA
    assert "e.jsonl.state is corrupt" in no_traceback(contacts)
    assert {p.name: p.read_bytes() for p in clean_env.iterdir()} == before


def test_a_disk_that_fills_up_mid_run_exits_73_and_leaves_nothing_half_written(
    clean_env: Path,
) -> None:
    """RLIMIT_FSIZE makes the first big write fail (EFBIG), as a full disk would."""

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    proc = subprocess.run(
        [*command(), *SIM_DAY, "2026-01-02", "--out", "e.jsonl"],
        preexec_fn=small_files,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == ExitCode.CANT_CREATE, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "e.jsonl" in lines[0]
    assert "e.jsonl.state" in lines[0]
    assert files_in(clean_env) == []


# -- dates at the edges -------------------------------------------------------------------


def test_a_range_wholly_in_the_future_is_a_usage_error_not_a_plan(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    # up to the last representable day: no overflow, and no plan of events that cannot exist
    result = run(
        *BACKFILL[:2],
        "--since",
        "9999-12-30",
        "--until",
        "9999-12-31T23:59:59.999",
        "--out",
        "e.jsonl",
        "--dry-run",
    )
    assert result.code == ExitCode.USAGE
    assert "--since (9999-12-30T00:00:00.000Z) is in the future" in no_traceback(result)
    assert result.out == ""
    assert files_in(clean_env) == []


def test_a_range_that_ends_in_the_future_plans(clean_env: Path, run: Callable[..., Result]) -> None:
    result = run(*BACKFILL[:2], "--since", "2020-01-01", "--until", "9999-12-31",
                 "--out", "e.jsonl", "--dry-run")  # fmt: skip
    assert result.code == 0, result.err
    assert "slices: 4 of " in result.out  # the default: one slice per concurrent scroll
    assert files_in(clean_env) == []


@pytest.mark.parametrize(
    ("since", "until"),
    [("0001-01-01", "0001-01-03"), ("9999-12-30", "9999-12-31T23:00")],
)
def test_simulating_at_the_edges_of_the_calendar_is_a_usage_error(
    clean_env: Path, run: Callable[..., Result], since: str, until: str
) -> None:
    result = run("--simulate", "events", "backfill", "--since", since, "--until", until,
                 "--out", "e.jsonl")  # fmt: skip
    assert result.code == ExitCode.USAGE
    assert "0001-01-02 to 9999-12-30" in no_traceback(result)
    assert files_in(clean_env) == []


# -- options ------------------------------------------------------------------------------


@pytest.mark.parametrize("types", ["", ",", " "])
def test_an_empty_types_list_is_an_error_not_every_type(
    clean_env: Path, run: Callable[..., Result], types: str
) -> None:
    result = run(*BACKFILL, "--types", types, "--out", "e.jsonl", "--dry-run")
    assert result.code == ExitCode.USAGE
    assert "--types" in no_traceback(result)
    assert result.out == ""


def test_the_dry_run_counts_in_words(clean_env: Path, run: Callable[..., Result]) -> None:
    result = run(*BACKFILL, "--out", "e.jsonl", "--dry-run")
    assert result.code == 0, result.err
    assert "+ 1 login = " in result.out
    assert "(1 day)" in result.out
    assert "(s)" not in result.out


def test_a_state_for_another_job_is_described_in_the_users_words(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    first = run(*SIM_DAY, "2026-01-02", "--types", "visit,login", "--out", "e.jsonl")
    assert first.code == 0, first.err
    result = run(*SIM_DAY, "2026-01-02", "--out", "e.jsonl")
    assert result.code == ExitCode.DATA
    line = no_traceback(result)
    assert "types: the state has login,visit, this run asks all" in line
    assert "None" not in line
    assert "'" not in line


def test_hotspot_create_errors_name_the_fields_as_typed(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--simulate", "-q", "hotspots", "create", "--data", '{"name": "Lobby"}')
    assert result.code == ExitCode.USAGE
    line = no_traceback(result)
    assert "venueId" in line
    assert "venue_id" not in line
    body = {"name": "Lobby", "venueId": "v-1", "routerType": "generic", "ssid": "Guest"}
    result = run("--simulate", "-q", "hotspots", "create", "--data", json.dumps(body))
    assert result.code == ExitCode.USAGE
    line = no_traceback(result)
    assert "addressAsLocation" in line
    assert "address_as_location" not in line


def test_delete_without_yes_and_without_a_terminal_is_a_usage_error(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    assert not sys.stdin.isatty()
    result = run("--simulate", "-q", "hotspots", "delete", "h-1")
    assert result.code == ExitCode.USAGE
    assert "--yes" in no_traceback(result)


def test_table_output_keeps_ids_whole_on_a_narrow_terminal(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = run("-q", "--simulate", "hotspots", "list")
    ids = [h["id"] for h in json.loads(listed.out)]
    monkeypatch.setenv("COLUMNS", "60")
    table = run("-q", "--simulate", "hotspots", "list", "--format", "text")
    assert table.code == 0, table.err
    assert ids
    for hotspot_id in ids:
        assert hotspot_id in table.out


# -- the plain-http switch ----------------------------------------------------------------


def test_the_cli_names_its_own_plain_http_switches(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "k")
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", "s")
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ASYNCWIFI_ORGANIZATION", "o")
    result = run(*BACKFILL, "--out", "e.jsonl")
    assert result.code == ExitCode.CONFIG
    line = no_traceback(result)
    assert "--allow-http" in line
    assert "ASYNCWIFI_ALLOW_HTTP=1" in line
    assert "allow_http=True" not in line
    assert files_in(clean_env) == []


def test_the_sdk_log_and_the_command_spell_warnings_alike() -> None:
    import io
    import logging

    from asyncwifi.cli._app import _TextFormatter
    from asyncwifi.cli._progress import Display

    record = logging.LogRecord("asyncwifi.x", logging.WARNING, __file__, 1, "slow", (), None)
    stream = io.StringIO()
    Display(stream=stream).warning("w", "slow")
    assert (
        _TextFormatter().format(record) == stream.getvalue().strip() == ("asyncwifi: warning: slow")
    )


def test_counts_in_messages_agree_with_their_nouns(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    one = run(*BACKFILL, "--types", "visit,teleport", "--out", "e.jsonl", "--dry-run")
    assert "unknown event type teleport;" in no_traceback(one)
    two = run(*BACKFILL, "--types", "warp,teleport", "--out", "e.jsonl", "--dry-run")
    assert "unknown event types warp, teleport;" in no_traceback(two)
    field = run("--simulate", "-q", "hotspots", "update", "h1", "--data", '{"nmae": "x"}')
    assert "unknown field nmae;" in no_traceback(field)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--out", "/proc/x.jsonl"), "output /proc/x.jsonl"),
        (("--out", "h.jsonl", "--spool", "/proc/x.sqlite"), "spool /proc/x.sqlite"),
    ],
)
def test_webhooks_serve_checks_its_files_before_listening(
    clean_env: Path,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    named: str,
) -> None:
    monkeypatch.setenv("ASYNCWIFI_WEBHOOK_SECRET", "a-long-enough-secret")
    result = run("webhooks", "serve", "--port", "0", *args)
    assert result.code == ExitCode.CANT_CREATE
    assert named in no_traceback(result)
    assert files_in(clean_env) == []


@pytest.mark.parametrize("args", [("--sim-speed", "1e300", "segments", "list"),
                                  ("simulate", "--speed", "1e300")])  # fmt: skip
def test_absurd_clock_speeds_are_usage_errors(
    clean_env: Path, run: Callable[..., Result], args: tuple[str, ...]
) -> None:
    result = run(*args)
    assert result.code == ExitCode.USAGE
    assert "speed" in no_traceback(result)
