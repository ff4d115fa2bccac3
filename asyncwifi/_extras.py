"""The optional extras: the one place that says how to install one.

The package is not on a package index: ``pip install 'asyncwifi[sync]'`` works only where
someone published it. Run from a source checkout (an editable install, as the README's
``pip install -e ".[cli]"``), the hint names the checkout itself
(``pip install -e "/path/to/asyncwifi[sync]"``), which works from any directory;
installed any other way (a wheel), it names the index form. Every module that imports an
optional extra's package asks :func:`require` (or :func:`install_hint` for its own words).
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from types import ModuleType

from asyncwifi.errors import ConfigurationError

__all__ = ["install_hint", "require", "source_checkout"]


@functools.cache
def source_checkout() -> Path | None:
    """The source checkout this package runs from (its ``pyproject.toml`` names it), or
    None (an installed copy)."""
    root = Path(__file__).resolve().parent.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "asyncwifi"' in text else None


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` here (see the module docstring)."""
    root = source_checkout()
    if root is not None:
        return f'pip install -e "{root}[{extra}]"'
    return f"pip install 'asyncwifi[{extra}]'"


def require(module: str, extra: str, owner: str) -> ModuleType:
    """``module`` imported, or a ``ConfigurationError`` saying that ``owner`` needs it and
    how to install ``extra`` (one line, no traceback in the command)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        root = module.partition(".")[0]
        raise ConfigurationError(f"{owner} needs {root}: {install_hint(extra)}") from None
