"""The append-only JSONL log of transactions, and an in-memory twin with the same contract.

Line format: one record per line, as msgspec encodes it, with `"h"` spliced in last:
a hash of the previous line's `h` and this line's bytes without it. A transaction
is its event lines followed by a `TransactionCommitted` line, written with one
`write` under an exclusive lock and `fsync`ed before `append` returns.

Readers never lock and never write: they see whole committed transactions only,
and a torn tail (a crash mid-write) is invisible to them. A damaged line followed
by committed data is corruption: reading stops with `CorruptLogError`. Only a
writer, holding the lock, cuts a torn tail, after copying the bytes it cuts to a
file beside the log; the transaction it then writes records that it did so.
Safe across processes on one machine; not NFS-safe (it relies on `flock`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from .domain import PlaybookState
from .errors import CorruptLogError, StorageError
from .events import (
    RECORD_TAGS,
    Cause,
    Event,
    TailRepaired,
    TransactionCommitted,
    UnknownRecord,
    encoder,
    record_decoder,
    unknown_decoder,
)
from .evolve import apply

CHUNK_SIZE = 1 << 20
_HASH_KEY = b',"h":"'


class Position(msgspec.Struct, frozen=True):
    """Where a reader stands: just after the committed transaction ending at `offset`."""

    offset: int = 0
    seq: int = 0
    hash: str = ""
    line: int = 0


class Transaction(msgspec.Struct, frozen=True):
    """One committed transaction: its events (unknown record types included) and its commit record."""

    events: list[Event | UnknownRecord]
    commit: TransactionCommitted
    start: Position
    end: Position


class TornTail(msgspec.Struct, frozen=True):
    """Bytes after the last committed transaction: a write that never finished."""

    offset: int
    length: int
    line: int


class Committed(msgspec.Struct, frozen=True):
    """What one append wrote, and the state and position after it."""

    events: list[Event]
    commit: TransactionCommitted
    state: PlaybookState
    position: Position


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def line_hash(previous: str, body: bytes) -> str:
    return hashlib.blake2b(previous.encode() + body, digest_size=12).hexdigest()


def encode_line(record: msgspec.Struct, previous_hash: str) -> tuple[bytes, str]:
    """The line for `record` chained to `previous_hash`, and its own hash."""
    body = encoder.encode(record)
    digest = line_hash(previous_hash, body)
    return body[:-1] + _HASH_KEY + digest.encode() + b'"}\n', digest


def split_hash(line: bytes) -> tuple[bytes, str] | None:
    """(body without "h", h) of a line as `encode_line` wrote it, or None."""
    line = line.rstrip(b"\n")
    cut = line.rfind(_HASH_KEY)
    if cut < 0 or not line.endswith(b'"}'):
        return None
    return line[:cut] + b"}", line[cut + len(_HASH_KEY) : -2].decode("ascii", "replace")


def _decode_line(line: bytes) -> TransactionCommitted | Event | UnknownRecord:
    """Decode one line; a well-formed record of a type this version does not know is an UnknownRecord."""
    try:
        return record_decoder.decode(line)
    except msgspec.ValidationError:
        unknown = unknown_decoder.decode(line)  # raises when it is not even a record
        if unknown.type in RECORD_TAGS:
            raise
        return unknown


class LogReader:
    """Iterates the committed transactions of a log file from `start`, strictly.

    After iteration, `position` is just after the last committed transaction and
    `torn` describes any unfinished tail. Streams the file in chunks.
    """

    def __init__(self, path: Path, start: Position = Position()) -> None:
        self.path = path
        self.position = start
        self.torn: TornTail | None = None

    def __iter__(self) -> Iterator[Transaction]:
        try:
            handle = open(self.path, "rb")
        except (FileNotFoundError, NotADirectoryError):
            return
        with handle:
            handle.seek(self.position.offset)
            yield from self._scan(handle)

    def _scan(self, handle) -> Iterator[Transaction]:
        pos = self.position
        pending: list[Event | UnknownRecord] = []
        pending_start = pos
        offset, line_no, previous_hash = pos.offset, pos.line, pos.hash
        expected_seq = pos.seq + 1
        damage: tuple[int, int, str] | None = None  # (line, offset, reason) of the first bad line
        leftover = b""
        while True:
            data = handle.read(CHUNK_SIZE)
            if not data:
                break
            data = leftover + data
            cut = data.rfind(b"\n") + 1
            chunk, leftover = data[:cut], data[cut:]
            start = 0
            while start < len(chunk):
                end = chunk.index(b"\n", start) + 1
                raw = chunk[start:end]
                line_no += 1
                line_offset = offset
                offset += len(raw)
                start = end
                try:
                    record = _decode_line(raw)
                except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
                    if damage is None:
                        damage = (line_no, line_offset, f"undecodable record: {exc}")
                    continue
                hashed = split_hash(raw)
                if hashed is None or hashed[1] != line_hash(previous_hash, hashed[0]):
                    if damage is None:
                        damage = (line_no, line_offset, "hash does not match the line and the one before it")
                    if isinstance(record, TransactionCommitted):
                        raise CorruptLogError(self.path, *damage)
                    continue
                previous_hash = hashed[1]
                if damage is not None:
                    if isinstance(record, TransactionCommitted):
                        raise CorruptLogError(self.path, *damage)
                    continue
                if record.seq != expected_seq:
                    damage = (line_no, line_offset, f"sequence {record.seq} where {expected_seq} was expected")
                    if isinstance(record, TransactionCommitted):
                        raise CorruptLogError(self.path, *damage)
                    continue
                expected_seq += 1
                if not isinstance(record, TransactionCommitted):
                    if pending and record.tx != pending[0].tx:
                        damage = (line_no, line_offset, f"record of transaction {record.tx} inside {pending[0].tx}")
                        continue
                    pending.append(record)
                    continue
                if record.events != len(pending) or any(e.tx != record.tx for e in pending):
                    raise CorruptLogError(
                        self.path, line_no, line_offset,
                        f"commit of {record.events} events follows {len(pending)} records of its transaction",
                    )
                end_pos = Position(offset=offset, seq=record.seq, hash=previous_hash, line=line_no)
                transaction = Transaction(events=pending, commit=record, start=pending_start, end=end_pos)
                pending, pending_start = [], end_pos
                self.position = end_pos
                yield transaction
        size = offset + len(leftover)
        if size > self.position.offset:
            self.torn = TornTail(offset=self.position.offset, length=size - self.position.offset,
                                 line=self.position.line + 1)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fold_log(
    path: Path, state: PlaybookState, start: Position = Position(), until: int | None = None
) -> tuple[PlaybookState, Position, TornTail | None]:
    """Fold the committed transactions after `start` (and ending by byte `until`) into `state`, in place."""
    reader = LogReader(path, start)
    position = start
    for transaction in reader:
        if until is not None and transaction.end.offset > until:
            return state, position, None
        for event in transaction.events:
            if not isinstance(event, UnknownRecord):
                apply(state, event)
        state.seq = transaction.commit.seq
        position = transaction.end
    return state, reader.position, reader.torn


def hash_at(path: Path, position: Position) -> bool:
    """True when the line ending at `position.offset` carries `position.hash` (O(1): reads one line)."""
    if position.offset == 0:
        return position.hash == ""
    try:
        with open(path, "rb") as handle:
            back = min(position.offset, 1 << 16)
            handle.seek(position.offset - back)
            data = handle.read(back)
    except OSError:
        return False
    if len(data) != back or not data.endswith(b"\n"):
        return False
    line = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
    hashed = split_hash(line)
    return hashed is not None and hashed[1] == position.hash


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

    def read(self, start: Position = Position()) -> LogReader:
        return LogReader(self.path, start)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive writer lock (blocking)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create directory {self.path.parent}: {exc.strerror or exc}") from exc
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise StorageError(f"cannot lock {self.lock_path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def append_locked(
        self,
        state: PlaybookState,
        position: Position,
        decide: Callable[[PlaybookState], list[Event]],
        cause: Cause,
    ) -> Committed | None:
        """Append what `decide` returns for the state at the log's end. Caller holds `locked()`.

        `state`/`position` are a known point of this log (a checkpoint); the tail after it
        is folded first. Returns None when there is nothing to write. Durable when it returns.
        """
        if position.offset and not hash_at(self.path, position):
            state, position = PlaybookState(), Position()
        state, position, torn = fold_log(self.path, state, position)
        events: list[Event] = []
        if torn is not None:
            events.append(self._cut_tail(torn))
        decided = decide(state)
        if not decided and not events:
            return None
        events.extend(decided)
        return self._write(state, position, events, cause)

    def _cut_tail(self, torn: TornTail) -> TailRepaired:
        with open(self.path, "rb") as handle:
            handle.seek(torn.offset)
            cut = handle.read()
        kept = self.path.with_name(f"{self.path.name}.torn-{datetime.now(timezone.utc):%Y%m%dT%H%M%S%fZ}")
        try:
            with open(kept, "wb") as handle:
                handle.write(cut)
                handle.flush()
                os.fsync(handle.fileno())
            fd = os.open(self.path, os.O_RDWR)
            try:
                os.ftruncate(fd, torn.offset)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError(f"cannot repair the torn tail of {self.path}: {exc.strerror or exc}") from exc
        return TailRepaired(offset=torn.offset, bytes_cut=len(cut), kept_at=kept.name)

    def _write(self, state: PlaybookState, position: Position, events: list[Event], cause: Cause) -> Committed:
        tx = uuid.uuid4().hex[:16]
        at = utc_now()
        seq = position.seq
        previous = position.hash
        lines: list[bytes] = []
        stamped: list[Event] = []
        for event in events:
            seq += 1
            event = msgspec.structs.replace(event, seq=seq, tx=tx, at=at)
            stamped.append(event)
            line, previous = encode_line(event, previous)
            lines.append(line)
        seq += 1
        commit = TransactionCommitted(
            seq=seq, tx=tx, at=at, events=len(stamped), source=cause.source, session=cause.session,
            model=cause.model, analysis=cause.analysis, reasoning=cause.reasoning, note=cause.note,
        )
        line, previous = encode_line(commit, previous)
        lines.append(line)
        payload = b"".join(lines)
        created = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                written = os.write(fd, payload)
                while written < len(payload):  # a short write to a regular file: finish it
                    written += os.write(fd, payload[written:])
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                _fsync_dir(self.path.parent)
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path}: {exc.strerror or exc}") from exc
        for event in stamped:
            apply(state, event)
        state.seq = seq
        end = Position(offset=position.offset + len(payload), seq=seq, hash=previous, line=position.line + len(lines))
        return Committed(events=stamped, commit=commit, state=state, position=end)


class InMemoryEventStore:
    """The same contract as `JsonlEventStore`, kept in memory: for tests and previews."""

    def __init__(self) -> None:
        self.transactions: list[Transaction] = []
        self._clock = 0

    def exists(self) -> bool:
        return bool(self.transactions)

    def read(self, start: Position = Position()) -> Iterator[Transaction]:
        return iter([t for t in self.transactions if t.start.seq >= start.seq])

    @contextmanager
    def locked(self) -> Iterator[None]:
        yield

    def append_locked(self, state: PlaybookState, position: Position, decide: Callable[[PlaybookState], list[Event]],
                      cause: Cause) -> Committed | None:
        for transaction in self.read(position):
            for event in transaction.events:
                if not isinstance(event, UnknownRecord):
                    apply(state, event)
            state.seq, position = transaction.commit.seq, transaction.end
        decided = decide(state)
        if not decided:
            return None
        tx, at, seq = uuid.uuid4().hex[:16], utc_now(), position.seq
        stamped = []
        for event in decided:
            seq += 1
            stamped.append(msgspec.structs.replace(event, seq=seq, tx=tx, at=at))
            apply(state, stamped[-1])
        seq += 1
        state.seq = seq
        commit = TransactionCommitted(seq=seq, tx=tx, at=at, events=len(stamped), source=cause.source,
                                      session=cause.session, model=cause.model, analysis=cause.analysis,
                                      reasoning=cause.reasoning, note=cause.note)
        end = Position(offset=seq, seq=seq, hash="", line=seq)
        self.transactions.append(Transaction(events=stamped, commit=commit, start=position, end=end))
        return Committed(events=stamped, commit=commit, state=state, position=end)
