"""Where a sync keeps its things: `<user-level dir>/sync/`, reached from the user-level directory, no link followed.

`git/` is the private bare repository; `lock` is held for a whole sync (one at a time);
`last` is touched at each sync's start (the background's pace); `status` holds the last
sync's line; the remote's log, the merge base's and the merged one are written here while a
sync works (`theirs.jsonl`, `base.jsonl`, `merged.jsonl`); a remote log that is refused is
kept in `refused/`, named for its commit.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eventlog.errors import PlaybookError, StorageError
from eventlog.safefiles import create, directory, replace, write_file

SYNC_DIR = "sync"
THEIRS, BASE, MERGED = "theirs.jsonl", "base.jsonl", "merged.jsonl"
CARRIED = "theirs-purged.jsonl"
"""The remote's log with a purge of ours carried into it (`projections.purge_carry`); THEIRS stays as fetched."""


class Busy(PlaybookError):
    """Another sync holds the lock."""


class SyncPlace:
    """The sync's directory under the user-level playbook's `user_dir` (its root: nothing below it is a link)."""

    def __init__(self, user_dir: Path) -> None:
        self.root = Path(user_dir)
        self.dir = self.root / SYNC_DIR
        self.git_dir = self.dir / "git"
        self.refused_dir = self.dir / "refused"

    def made(self) -> None:
        """The directory, made when missing; a link or a file under its name is refused (`Unsafe`)."""
        with directory(self.dir, self.root, create=True):
            pass
        if os.path.islink(self.git_dir):
            raise StorageError(f"{self.git_dir} is a link: sync works only in a directory of its own",
                               action="sync", path=self.git_dir)

    def path(self, name: str) -> Path:
        return self.dir / name

    @contextmanager
    def writing(self, name: str) -> Iterator[int]:
        """A descriptor of the file `name` here, emptied, for the length of the block."""
        with directory(self.dir, self.root, create=True) as dir_fd:
            fd = create(dir_fd, name, truncate=True)
        try:
            yield fd
            os.fsync(fd)
        finally:
            os.close(fd)

    @contextmanager
    def locked(self, wait: bool) -> Iterator[None]:
        """Hold the sync lock; `Busy` at once when another sync holds it and `wait` is false."""
        with directory(self.dir, self.root, create=True) as dir_fd:
            fd = create(dir_fd, "lock", read=True)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError as exc:
                raise Busy("another sync is running") from exc
            yield
        finally:
            os.close(fd)

    def since_last(self) -> float | None:
        """Seconds since the last sync started, or None when none did."""
        try:
            return time.time() - os.stat(self.path("last")).st_mtime
        except OSError:
            return None

    def started(self) -> None:
        write_file(self.path("last"), b"", self.root, durable_name=False)

    def said(self, line: str) -> None:
        write_file(self.path("status"), line.encode("utf-8", "replace") + b"\n", self.root, durable_name=False)

    def status(self) -> str | None:
        try:
            with open(self.path("status"), "rb") as reading:
                return reading.read(4096).decode("utf-8", "replace").strip() or None
        except OSError:
            return None

    def keep_aside(self, commit: str) -> Path:
        """Move the remote's log just fetched to `refused/<commit>.jsonl`; returns where it is."""
        name = f"{commit[:12]}.jsonl"
        with directory(self.refused_dir, self.root, create=True) as kept_fd, \
                directory(self.dir, self.root) as dir_fd:
            replace(dir_fd, THEIRS, name, kept_fd)
        return self.refused_dir / name


__all__ = ["BASE", "CARRIED", "MERGED", "THEIRS", "Busy", "SyncPlace"]
