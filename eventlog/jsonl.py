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
from .files import FILE_MODE, fsync_dir, make_dirs


class JsonlEventStore:
    """The log at `path`, locked through `path` + `.lock`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

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
            make_dirs(self.path.parent)
        except OSError as exc:
            raise StorageError.failed("create directory", self.path.parent, exc) from exc
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        except OSError as exc:
            raise StorageError.failed("lock", self.lock_path, exc) from exc
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
            with os.fdopen(os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as handle:
                handle.write(cut)
                handle.flush()
                os.fsync(handle.fileno())
            fault("after-cut")
            fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW)
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
        created = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
            try:
                found = os.fstat(fd).st_size
                if found != position.offset:
                    raise PositionMismatch(self.path, position.offset, found)
                written = os.write(fd, payload)
                while written < len(payload):  # a short write to a regular file: finish it
                    written += os.write(fd, payload[written:])
                fault("after-write")
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                fsync_dir(self.path.parent)
        except OSError as exc:
            raise StorageError.failed("append to", self.path, exc) from exc
        fault("after-fsync")
        end = Position(offset=position.offset + len(payload), seq=seq, hash=text(running),
                       line=position.line + len(lines))
        return Written(events=stamped, commit=commit, position=end)
