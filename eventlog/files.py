"""The modes of the files and directories the log and its projections create."""

from __future__ import annotations

import os
from pathlib import Path

SHARED_FILES = os.environ.get("PLAYBOOK_SHARED_FILES", "").lower() not in ("", "0", "false", "no")
"""The setting `PLAYBOOK_SHARED_FILES=1`: files follow the umask (group may read), as other tools' files do."""
FILE_MODE = 0o664 if SHARED_FILES else 0o600
"""Mode of every file created here: private to the user (the log quotes transcripts and model answers),
unless shared; the umask applies on top, and none is ever world-writable."""
DIR_MODE = 0o775 if SHARED_FILES else 0o700
"""Mode of every directory created here: never world-writable, whatever the umask."""


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
