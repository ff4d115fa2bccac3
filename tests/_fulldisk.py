"""A real full disk for a test: a small ``tmpfs`` mounted on a folder of ``tmp_path``; and a
folder that cannot be written.

``ENOSPC`` comes from the kernel as it would on a full partition (SQLite's own writes and
checkpoints included, which ``RLIMIT_FSIZE`` cannot reproduce: it limits each file, not
the disk). Mounting needs root; elsewhere the test is skipped, saying so. A read-only
folder is a read-only mount for root (whom file modes do not stop), ``chmod 555`` else.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["SmallDisk", "read_only_folder", "small_disk"]


class SmallDisk:
    """A mounted tmpfs of a given size: ``path``; ``resize`` frees (or takes) space."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def resize(self, size: str) -> None:
        """``mount -o remount,size=SIZE``: the files stay, the room changes."""
        _mount("-o", f"remount,size={size}", str(self.path))


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, timeout=30)


@contextmanager
def small_disk(tmp_path: Path, size: str, name: str = "disk") -> Iterator[SmallDisk]:
    """A tmpfs of ``size`` (``3000k``) on ``tmp_path / name``, unmounted afterwards."""
    path = tmp_path / name
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a real full disk is a small tmpfs, and mounting one needs root")
    try:
        _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a small tmpfs here ({exc}): a real full disk is needed")
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True, timeout=30)


@contextmanager
def read_only_folder(tmp_path: Path, name: str = "read-only") -> Iterator[Path]:
    """A folder nobody can write in (this process included), as an operator meets one."""
    path = tmp_path / name
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield path
        finally:
            path.chmod(0o755)
        return
    try:
        _mount("-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(path))
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a read-only tmpfs here ({exc}), and root writes anywhere")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True, timeout=30)
