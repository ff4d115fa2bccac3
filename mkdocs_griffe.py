"""The API reference's docstrings: reST roles become links (a griffe extension the
mkdocstrings handler loads, see mkdocs.yml).

The code's docstrings cite other objects the way Python's own do: ``:class:`Syncer```,
``:meth:`~asyncwifi.ratelimit.Scheduler.objects```. Markdown shows those as literal text;
here each becomes a cross-reference (an ``<autoref>``, resolved by mkdocs-autorefs once
every page is built): a dotted name is looked up from the object that cites it outwards
(its class, its module, its package, then ``asyncwifi``), and one that names nothing the
reference shows stays plain code (``optional``: the strict build does not fail on it).
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any

import griffe

#: a role: ``:class:`Name```, ``:meth:`~a.b.C.m```, ``:func:`!name```
ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj):`([~!]?)([\w.]+)(\(\))?`")


def _resolve(obj: Any, target: str, root: Any) -> str | None:
    """The full path ``target`` names, seen from ``obj``; None when nothing has it."""
    scopes: list[str] = []
    scope = obj
    while scope is not None:
        scopes.append(scope.path)
        scope = scope.parent
    for base in [*scopes, ""]:
        path = f"{base}.{target}" if base else target
        relative = path.removeprefix(f"{root.path}.")
        if path == root.path:
            return path
        if path.startswith(f"{root.path}."):
            try:
                found = root[relative]
            except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            return str(found.path)
    return None


def _link(obj: Any, root: Any, match: re.Match[str]) -> str:
    mark, target, call = match.group(1), match.group(2), match.group(3) or ""
    title = target.rsplit(".", 1)[-1] if mark == "~" else target
    shown = f"<code>{html.escape(title + call)}</code>"
    path = None if mark == "!" else _resolve(obj, target, root)
    if path is None:
        return shown
    return f'<autoref identifier="{html.escape(path)}" optional>{shown}</autoref>'


class Roles(griffe.Extension):
    """Rewrites the roles of every docstring of the package once it is loaded."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        seen: set[int] = set()
        stack = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen or obj.is_alias:
                continue
            seen.add(id(obj))
            doc = obj.docstring
            if doc is not None and ":" in doc.value:
                doc.value = ROLE.sub(functools.partial(_link, obj, pkg), doc.value)
            stack.extend(m for m in obj.members.values() if not m.is_alias)
