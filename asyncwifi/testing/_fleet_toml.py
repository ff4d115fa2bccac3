"""A ``fleet.toml`` for a simulator's organizations (``asyncwifi simulate --fleet-toml``).

The file ``asyncwifi fleet`` reads: a ``[fleet]`` table with the simulator's ``base_url``
(plain http, so ``allow_http = true``) and one ``[[organizations]]`` table per organization
with its ``organization``, ``client_key`` and ``client_secret``. It holds secrets: it is
written readable by its owner only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from asyncwifi.testing._tenant import Credentials

__all__ = ["fleet_toml", "write_fleet_toml"]


def _string(value: str) -> str:
    # a JSON string is a TOML basic string (same escapes; JSON never writes ``\/``)
    return json.dumps(value, ensure_ascii=True)


def fleet_toml(base_url: str, organizations: Iterable[Credentials]) -> str:
    """The text of a fleet.toml for ``organizations`` served at ``base_url``."""
    lines = [
        "# written by asyncwifi simulate: the simulator's organizations",
        "[fleet]",
        f"base_url = {_string(base_url)}",
        "allow_http = true",
    ]
    for org in organizations:
        lines += [
            "",
            "[[organizations]]",
            f"organization = {_string(org.organization)}",
            f"client_key = {_string(org.client_key)}",
            f"client_secret = {_string(org.client_secret)}",
        ]
    return "\n".join(lines) + "\n"


def write_fleet_toml(
    path: str | os.PathLike[str], base_url: str, organizations: Iterable[Credentials]
) -> Path:
    """Write :func:`fleet_toml` to ``path`` (mode 0600: it holds the secrets); the path."""
    target = Path(path)
    text = fleet_toml(base_url, organizations)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(target, 0o600)  # an existing file keeps its mode through O_TRUNC
    return target
