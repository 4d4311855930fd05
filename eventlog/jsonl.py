"""The JSONL log as an `EventStore`: the lock, the writer, the torn-tail repair.

A transaction is written with one `write` under an exclusive lock and `fsync`ed before
`write` returns; a torn tail is copied to a file beside the log before it is cut. Safe
across processes on one machine; not NFS-safe (it relies on `flock`).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from . import checks, store
from .domain import PlaybookState
from .errors import PositionMismatch, StorageError
from .events import Cause, Event, TailRepaired
from .faults import point as fault
from .logformat import encoded, start, text
from . import storage
from .positions import Position, TornTail, Written
from .safefiles import create, directory, open_existing, write_all


class JsonlEventStore:
    """The log at `path`, locked through `path` + `.lock`.

    Every file it writes (the log, its lock, a torn tail's copy) is reached from `root` without following a
    link (`safefiles`): by default the directory above the log's, the project that holds `.claude/`."""

    def __init__(self, path: Path, root: Path | None = None) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.root = Path(root) if root is not None else self.path.parent.parent

    def exists(self) -> bool:
        return self.size() > 0

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return 0

    def read(self, start: Position = Position()) -> store.LogReader:
        return store.LogReader(self.path, start)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive writer lock (blocking)."""
        try:
            with directory(self.path.parent, self.root, create=True) as dir_fd:
                try:
                    fd = create(dir_fd, self.lock_path.name, read=True)
                except OSError as exc:
                    raise StorageError.failed("lock", self.lock_path, exc) from exc
        except OSError as exc:
            raise StorageError.failed("create directory", self.path.parent, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


    def mark(self) -> tuple[int, int, int] | None:
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return found.st_ino, found.st_size, found.st_mtime_ns

    def holds(self, position: Position) -> bool:
        return checks.hash_at(self.path, position)

    def fold(self, state: PlaybookState, start: Position = Position(), until: int | None = None
             ) -> tuple[PlaybookState, Position, TornTail | None]:
        return store.fold_log(self.path, state, start, until)

    def cut(self, torn: TornTail) -> TailRepaired:
        with open(self.path, "rb") as handle:
            handle.seek(torn.offset)
            cut = handle.read()
        kept = self.path.with_name(f"{self.path.name}.torn-{datetime.now(timezone.utc):%Y%m%dT%H%M%S%fZ}")
        try:
            with directory(self.path.parent, self.root) as dir_fd:
                fd = create(dir_fd, kept.name, truncate=True)
                try:
                    write_all(fd, cut)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                fault("after-cut")
                fd = open_existing(dir_fd, self.path.name)
                try:
                    os.ftruncate(fd, torn.offset)
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as exc:
            raise StorageError.failed("repair the torn tail of", self.path, exc) from exc
        return TailRepaired(offset=torn.offset, bytes_cut=len(cut), kept_at=kept.name)

    def write(self, position: Position, events: list[Event], cause: Cause) -> Written:
        tx, at = storage.new_transaction()
        seq = position.seq
        running = start(position.hash)
        lines: list[bytes] = []
        stamped: list[Event] = []
        for event in events:
            seq += 1
            event, line, running = encoded(msgspec.structs.replace(event, seq=seq, tx=tx, at=at), running)
            stamped.append(event)
            lines.append(line)
        seq += 1
        commit, line, running = encoded(storage.commit_record(seq, tx, at, len(stamped), cause), running)
        lines.append(line)
        payload = b"".join(lines)
        try:
            with directory(self.path.parent, self.root, create=True) as dir_fd:
                fd = create(dir_fd, self.path.name, append=True)
                try:
                    found = os.fstat(fd).st_size
                    if found != position.offset:
                        raise PositionMismatch(self.path, position.offset, found)
                    write_all(fd, payload)
                    fault("after-write")
                    os.fsync(fd)
                finally:
                    os.close(fd)
                if found == 0:
                    os.fsync(dir_fd)  # a log just created: its name must survive a crash with its first line
        except OSError as exc:
            raise StorageError.failed("append to", self.path, exc) from exc
        fault("after-fsync")
        end = Position(offset=position.offset + len(payload), seq=seq, hash=text(running),
                       line=position.line + len(lines))
        return Written(events=stamped, commit=commit, position=end)
