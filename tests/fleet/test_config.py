"""fleet.toml: defaults and per-organization overrides; a bad file is one line naming the
organization and the field, never a secret; secrets never show in a repr."""

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
