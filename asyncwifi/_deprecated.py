"""Renamed public names keep working for a while: the old name resolves to the new object
with a ``DeprecationWarning`` that names the replacement (deprecate, don't break)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["renamed"]


def renamed(
    module: str, names: Mapping[str, str], namespace: Mapping[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each old name of ``names`` (old -> new) from
    ``namespace`` with a warning; any other name is an ``AttributeError`` as usual."""

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is deprecated; use {module}.{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return namespace[new]

    return __getattr__
