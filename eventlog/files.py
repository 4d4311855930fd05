"""Creating the directories the log and its projections live in, with the modes of `eventlog.modes`."""

from __future__ import annotations

import os
from pathlib import Path

from .modes import DIR_MODE, FILE_MODE, SHARED_FILES

__all__ = ["DIR_MODE", "FILE_MODE", "SHARED_FILES", "fsync_dir", "make_dirs"]


def make_dirs(path: Path) -> None:
    """Create `path` and its missing parents with DIR_MODE: a umask of 000 never makes one world-writable."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass


def fsync_dir(directory: Path) -> None:
    """Make a rename or creation inside `directory` durable: on POSIX only the directory's own fsync does."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
