"""Every bad input: a one-line error, a documented status, and nothing written or sent."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from asyncwifi.cli import ExitCode
from tests.cli.conftest import Result

SECRET = "s3cr3t-value-never-shown"
BACKFILL = ("events", "backfill", "--since", "2026-01-01", "--until", "2026-01-08")


@pytest.fixture
def creds(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "key-1")
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", SECRET)
    # nothing listens here: a test that sent a request would fail loudly
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", "https://127.0.0.1:9")
    monkeypatch.setenv("ASYNCWIFI_ORGANIZATION", "org-1")
    return clean_env


def one_line_error(result: Result) -> str:
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("asyncwifi: error: ")
    assert SECRET not in result.err + result.out
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--since", "2026-13-01", "--until", "2026-01-08"), "is not an ISO 8601"),
        (("--since", "last tuesday", "--until", "2026-01-08"), "is not an ISO 8601"),
        (("--since", "2026-01-08", "--until", "2026-01-01"), "must be before --until"),
        (("--since", "2026-01-08", "--until", "2026-01-08"), "must be before --until"),
        (
            ("--since", "2026-01-01T02:00:00+02:00", "--until", "2026-01-01T00:00:00Z"),
            "must be before --until",
        ),
        (
            ("--since", "2026-01-01", "--until", "2026-01-08", "--types", "visit,teleport"),
            "teleport",
        ),
        (("--since", "2026-01-01", "--until", "2026-01-08", "--slice", "1 fortnight"), "duration"),
        (("--since", "2020-01-01", "--until", "2026-01-08", "--slice", "1s"), "slices"),
        (("--since", "2026-01-01", "--until", "2026-01-08", "--concurrency", "0"), "concurrency"),
        (("--until", "2026-01-08"), "--since"),
    ],
)
def test_bad_command_lines_exit_2_with_one_line_and_write_nothing(
    creds: Path, run: Callable[..., Result], args: tuple[str, ...], expected: str
) -> None:
    result = run("events", "backfill", *args, "--out", "events.jsonl")
    assert result.code == ExitCode.USAGE == 2
    assert expected in one_line_error(result)
    assert list(creds.iterdir()) == []


def test_the_output_cannot_be_standard_output(creds: Path, run: Callable[..., Result]) -> None:
    result = run(*BACKFILL, "--out", "-")
    assert result.code == ExitCode.USAGE
    assert "standard output" in one_line_error(result)


def test_missing_credentials_exit_78_naming_the_variables(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run(*BACKFILL, "--out", "events.jsonl")
    assert result.code == ExitCode.CONFIG == 78
    line = one_line_error(result)
    assert "ASYNCWIFI_CLIENT_KEY" in line
    assert "ASYNCWIFI_CLIENT_SECRET" in line
    assert list(clean_env.iterdir()) == []


def test_a_partial_configuration_names_only_what_is_missing(
    clean_env: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "key-1")
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", SECRET)
    result = run("segments", "list")
    assert result.code == ExitCode.CONFIG
    line = one_line_error(result)
    assert "ASYNCWIFI_BASE_URL" in line
    assert "ASYNCWIFI_CLIENT_KEY" not in line


@pytest.mark.parametrize("where", ["missing-dir", "a-directory"])
def test_an_unwritable_output_exits_73(creds: Path, run: Callable[..., Result], where: str) -> None:
    out = "nowhere/events.jsonl" if where == "missing-dir" else "."
    result = run(*BACKFILL, "--out", out, "--state", "s.state")
    assert result.code == ExitCode.CANT_CREATE == 73
    one_line_error(result)
    assert list(creds.iterdir()) == []


def test_an_existing_output_without_its_state_exits_65_and_is_left_alone(
    creds: Path, run: Callable[..., Result]
) -> None:
    (creds / "events.jsonl").write_text('{"id": "precious"}\n')
    result = run(*BACKFILL, "--out", "events.jsonl")
    assert result.code == ExitCode.DATA == 65
    assert "no state file" in one_line_error(result)
    assert (creds / "events.jsonl").read_text() == '{"id": "precious"}\n'
    assert sorted(p.name for p in creds.iterdir()) == ["events.jsonl"]


def test_a_state_file_for_another_job_exits_65(creds: Path, run: Callable[..., Result]) -> None:
    from asyncwifi._instant import parse_instant
    from asyncwifi.backfill._jobs import events_params
    from asyncwifi.backfill._plan import plan_slices
    from asyncwifi.engine._jsonl import JsonlDestination

    since, until = parse_instant("2026-01-01"), parse_instant("2026-01-08")
    from datetime import timedelta

    params = events_params(
        out=creds / "events.jsonl",
        since=since,
        until=until,
        types=["visit"],
        slice_size=timedelta(days=1),
        gzip=False,
    )
    store = JsonlDestination(
        creds / "events.jsonl.state",
        creds / "events.jsonl",
        params,
        parts=len(plan_slices(since, until, timedelta(days=1))),
    )
    asyncio.run(store.open())
    asyncio.run(store.close())
    before = {p.name: p.stat().st_mtime_ns for p in creds.iterdir()}
    result = run(*BACKFILL, "--types", "login", "--out", "events.jsonl")
    assert result.code == ExitCode.DATA
    assert "another job" in one_line_error(result)
    assert {p.name: p.stat().st_mtime_ns for p in creds.iterdir()} == before


def test_a_config_file_that_does_not_parse_exits_78(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    config = clean_env / "bad.toml"
    config.write_text(f'client_secret = "{SECRET}"\nclient_key = \n')
    result = run("--config", str(config), "segments", "list")
    assert result.code == ExitCode.CONFIG
    assert "cannot read config file" in one_line_error(result)


def test_an_explicit_config_file_that_does_not_exist_exits_78(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("--config", "missing.toml", "segments", "list")
    assert result.code == ExitCode.CONFIG
    assert "does not exist" in one_line_error(result)


def test_a_config_file_with_an_unknown_key_exits_78(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    config = clean_env / "c.toml"
    config.write_text('client_secret_typo = "x"\n')
    result = run("--config", str(config), "segments", "list")
    assert result.code == ExitCode.CONFIG
    assert "client_secret_typo" in one_line_error(result)


def test_credentials_from_the_config_file_warn_when_others_can_read_it(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    config = clean_env.parent / "home" / ".config" / "asyncwifi" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'client_key = "k"\nclient_secret = "{SECRET}"\nbase_url = "http://127.0.0.1:9"\n'
        'organization = "org"\n'
    )
    os.chmod(config, 0o644)
    # plain http without --allow-http: refused by the client before any request
    result = run("segments", "list")
    assert result.code == ExitCode.CONFIG
    assert "chmod 600" in result.err
    assert "http" in result.err.splitlines()[-1]
    assert SECRET not in result.err + result.out


def test_webhooks_serve_takes_its_secret_only_from_the_environment(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run("webhooks", "serve", "--out", "hooks.jsonl", "--secret", "x")
    assert result.code == ExitCode.USAGE
    result = run("webhooks", "serve", "--out", "hooks.jsonl")
    assert result.code == ExitCode.CONFIG
    assert "ASYNCWIFI_WEBHOOK_SECRET" in one_line_error(result)


def test_hotspot_bodies_are_checked_before_anything_is_sent(
    creds: Path, run: Callable[..., Result]
) -> None:
    result = run("hotspots", "create", "--data", '{"nmae": "x"}')
    assert result.code == ExitCode.USAGE
    assert "nmae" in one_line_error(result)
    result = run("hotspots", "update", "h1", "--data", '{"venueId": "v"}')
    assert result.code == ExitCode.USAGE
    assert "venueId" in one_line_error(result)
    result = run("hotspots", "create", "--data", "{not json")
    assert result.code == ExitCode.USAGE


def test_the_default_plan_is_one_long_cursor_per_concurrent_scroll(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    # a daily slice ends every day with a page that is not full: 7 of them cost 183
    # requests (below); 4 long slices, one per concurrent scroll, cost 177
    result = run(*BACKFILL, "--out", "events.jsonl", "--dry-run", "--events-per-day", "250000")
    assert result.code == 0, result.err
    assert "slices: 4 of 1 d 18 h, 4 at a time" in result.out
    assert "1,750,000 events = 172 full pages of 10,000 + 4 last pages" in result.out
    assert "= 177 requests" in result.out


def test_dry_run_prints_the_plan_without_credentials_requests_or_files(
    clean_env: Path, run: Callable[..., Result]
) -> None:
    result = run(
        *BACKFILL,
        "--out",
        "events.jsonl",
        "--dry-run",
        "--events-per-day",
        "250000",
        "--slice",
        "1d",
    )
    assert result.code == 0, result.err
    text = result.out
    assert "slices: 7 of 1 d" in text
    assert "#0    2026-01-01T00:00:00.000Z .. 2026-01-01T23:59:59.999Z" in text
    # 250,000 a day: 25 full pages + the empty page per slice, 7 slices, one login
    assert "1,750,000 events" in text
    assert "= 183 requests" in text
    assert "sent 0 requests" in text
    assert list(clean_env.iterdir()) == []


def test_dry_run_in_json(clean_env: Path, run: Callable[..., Result]) -> None:
    result = run(
        "--log-format", "json", *BACKFILL, "--out", "e.jsonl", "--dry-run", "--slice", "12h"
    )
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    assert plan["slices"] == 14
    assert plan["requests_spent_by_dry_run"] == 0
    assert plan["estimated_requests"] == plan["page_requests"] + plan["logins"]


def test_a_bare_command_shows_its_help(clean_env: Path, run: Callable[..., Result]) -> None:
    result = run()
    assert result.code == 0
    assert "events" in result.out
    assert "--simulate" in result.out
    result = run("nosuch")
    assert result.code == ExitCode.USAGE
    assert "nosuch" in one_line_error(result)


def test_without_the_cli_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the SDK's install has neither click nor rich (CI checks a real base install too)
    import importlib.util

    from asyncwifi._extras import install_hint
    from asyncwifi.cli import ExitCode, main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "rich" else real(name, *a)
    )
    assert main(["--help"]) == ExitCode.CONFIG
    err = capsys.readouterr().err
    assert err.strip() == f"asyncwifi: the command needs rich: {install_hint('cli')}"
