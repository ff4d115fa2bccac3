"""fleet.toml: defaults and per-organization overrides; a bad file is one line naming the
organization and the field, never a secret; secrets never show in a repr; the month's
object allowance and the share of it the sync plans reach each organization's client and
sync options."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncwifi.errors import ConfigurationError
from asyncwifi.fleet import load_fleet_config

GOOD = """
[fleet]
base_url = "https://api.example.net"
poll = "2m"
budget = 0.5
allowance = "10 access points"

[[organizations]]
organization = "org-a"
client_key = "key-a"
client_secret = "s3cret-a"

[[organizations]]
organization = "org-b"
client_key = "key-b"
client_secret_env = "ORG_B_SECRET"
poll = 30
base_url = "http://127.0.0.1:9000"
allow_http = true
since = "2024-01-01"
allowance = 5000
object_share = 0.5
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


def test_defaults_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_fleet_config(write(tmp_path, GOOD))
    a, b = config["org-a"], config["org-b"]
    assert (a.poll, a.budget, a.base_url) == (120.0, 0.5, "https://api.example.net")
    assert (b.poll, b.budget, b.base_url, b.allow_http) == (
        30.0,
        0.5,
        "http://127.0.0.1:9000",
        True,
    )
    assert b.since is not None
    assert b.since.year == 2024
    # the month's objects (spec §8): the subscription's terms, or a number; the share
    assert (a.allowance, a.object_share) == ({"all": 20_000}, 0.9)
    assert (b.allowance, b.object_share) == ({"all": 5_000}, 0.5)
    assert a.secret().reveal() == "s3cret-a"
    assert "s3cret-a" not in repr(a)
    assert "s3cret-a" not in repr(config)
    monkeypatch.setenv("ORG_B_SECRET", "from-env")
    assert b.secret().reveal() == "from-env"
    monkeypatch.delenv("ORG_B_SECRET")
    with pytest.raises(ConfigurationError, match=r"org-b.*client_secret_env.*ORG_B_SECRET"):
        config.check_secrets()
    with pytest.raises(ConfigurationError, match="org-z"):
        config["org-z"]


BAD = [
    ('organization = "x"', "unknown table organization"),
    ("[fleet]\npoll = 1", "no \\[\\[organizations\\]\\]"),
    (
        '[[organizations]]\norganization = "o1"\nclient_key = "k"\nclient_secret = "SECRETVALUE"',
        "organization 'o1': base_url: missing",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o2"\nclient_key = "k"',
        "organization 'o2': client_secret: give either",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o3"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\npoll = "soon"',
        "organization 'o3': poll: a duration",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o4"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\nbudget = 2',
        "organization 'o4': budget",
    ),
    (
        '[fleet]\nbase_url = "http://x"\n[[organizations]]\norganization = "o5"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"',
        "organization 'o5': base_url: plain http",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o6"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\npassword = "SECRETVALUE"',
        "organization 'o6': password: unknown field",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o7"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\n[[organizations]]\n'
        'organization = "o7"\nclient_key = "k"\nclient_secret = "SECRETVALUE"',
        "organization 'o7': organization: listed twice",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o8"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\nallowance = "SECRETVALUE"',
        "organization 'o8': allowance: objects a month \\(20000\\), the subscription's terms",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o9"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\nallowance = 0',
        "organization 'o9': allowance:",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o10"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\nallowance = { visits = 10 }',
        "organization 'o10': allowance: .* by kind \\(all, events, contacts",
    ),
    (
        '[fleet]\nbase_url = "https://x"\nallowance = "ten APs"\n[[organizations]]\n'
        'organization = "o11"\nclient_key = "k"\nclient_secret = "SECRETVALUE"',
        "\\[fleet\\]: allowance:",
    ),
    (
        '[fleet]\nbase_url = "https://x"\n[[organizations]]\norganization = "o12"\n'
        'client_key = "k"\nclient_secret = "SECRETVALUE"\nobject_share = 0',
        "organization 'o12': object_share: a share of the month's object allowance in",
    ),
    (
        '[fleet]\nbase_url = "https://x"\nobject_share = 1.5\n[[organizations]]\n'
        'organization = "o13"\nclient_key = "k"\nclient_secret = "SECRETVALUE"',
        "\\[fleet\\]: object_share:",
    ),
    ("[fleet]\npoll = 1\n[[organizations]]\nclient_key = 1", "organization #1: organization"),
    ("[fleet\n", "not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_file_is_one_line_naming_the_organization_and_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        load_fleet_config(write(tmp_path, text))
    shown = str(caught.value)
    assert "\n" not in shown
    assert "SECRETVALUE" not in shown
    assert str(tmp_path) in shown


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read it"):
        load_fleet_config(tmp_path / "nope.toml")


async def test_the_allowance_and_share_reach_the_client_and_the_sync(tmp_path: Path) -> None:
    from asyncwifi.fleet._activities import _options
    from asyncwifi.fleet._clients import ClientPool

    config = load_fleet_config(write(tmp_path, GOOD))
    pool = ClientPool(environ={"ORG_B_SECRET": "from-env"})
    try:
        for name, allowance, share in (("org-a", 20_000, 0.9), ("org-b", 5_000, 0.5)):
            api = pool.client(config[name])
            assert api.scheduler.limits.allowance == {"all": allowance}
            assert api.scheduler.limits.on_exhausted == "raise"  # the workflow waits
            assert _options(config[name], None).object_share == share
    finally:
        await pool.aclose()
