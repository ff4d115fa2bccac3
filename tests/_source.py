"""Python source parsed for the tests that read the package's code (defaults, the house).

``ast.parse`` on CPython 3.11 can fail with "SystemError: AST constructor recursion depth
mismatch" when a garbage collection runs Python code (an abandoned async generator's
finalizer, left by an earlier test in the same worker) while it builds the tree: seen once
in a parallel run. The collector is held off while a tree is built.
"""

from __future__ import annotations

import ast
import gc


def parse_source(source: str) -> ast.Module:
    """``ast.parse(source)`` with the garbage collector held off meanwhile."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()
