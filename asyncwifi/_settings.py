"""One reading of settings: arguments over the environment over a file over the table's
default (``asyncwifi._defaults``), whoever reads them.

The command line (``config.toml`` and ``ASYNCWIFI_*``, ``cli._config``), ``fleet.toml`` (an
organization's table over ``[fleet]``), the dlt source (its keyword arguments,
``ASYNCWIFI_*``, then dlt's ``sources.asyncwifi.*``) and ``SyncOptions`` (its arguments over
the table) each hand their layers to :func:`resolve`: a value is set when it is neither
None nor "" (``None`` is "unset": the next layer's, in the end the owner's default).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["from_environment", "is_set", "resolve", "resolve_all"]


def is_set(value: object) -> bool:
    """Whether a layer says something: not None and not an empty string."""
    return value is not None and value != ""


def resolve(
    name: str,
    *,
    arguments: Mapping[str, Any] | None = None,
    environment: Mapping[str, Any] | None = None,
    file: Mapping[str, Any] | None = None,
    default: Any = None,
) -> Any:
    """``name``'s value: the arguments', else the environment's, else the file's, else
    ``default`` (the table's; None: the owner decides)."""
    for layer in (arguments, environment, file):
        if layer is not None and is_set(value := layer.get(name)):
            return value
    return default


def resolve_all(
    names: Iterable[str],
    *,
    arguments: Mapping[str, Any] | None = None,
    environment: Mapping[str, Any] | None = None,
    file: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`resolve` for each of ``names`` (``defaults``: each one's default)."""
    return {
        name: resolve(
            name,
            arguments=arguments,
            environment=environment,
            file=file,
            default=(defaults or {}).get(name),
        )
        for name in names
    }


def from_environment(
    variables: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment's layer: each setting of ``variables`` (setting -> variable) whose
    variable is set (blank is unset), its text as written."""
    env = os.environ if environ is None else environ
    return {name: env[var] for name, var in variables.items() if env.get(var, "").strip()}
