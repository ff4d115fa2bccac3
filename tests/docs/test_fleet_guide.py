"""The many-organizations guide's fleet.toml is what the fleet reads, as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="the fleet extra (temporalio) is not installed")

from asyncwifi.fleet import load_fleet_config

GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "many-organizations.md"


def test_the_guides_fleet_toml_parses_with_its_overrides(tmp_path: Path) -> None:
    block = re.search(r"^```toml\n(.*?)^```", GUIDE.read_text(), re.MULTILINE | re.DOTALL)
    assert block is not None, "the guide shows a fleet.toml"
    path = tmp_path / "fleet.toml"
    path.write_text(block.group(1))
    config = load_fleet_config(path)
    by_id = config.organizations
    assert sorted(by_id) == ["org-a", "org-b"]
    assert by_id["org-a"].poll == 60.0
    assert by_id["org-b"].poll == 30.0
    assert by_id["org-b"].base_url == "https://api.example.net"
