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
import os
import signal
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from .domain import PlaybookState
from .errors import CorruptLogError, StorageError
from .events import Cause, Event, RecordType, TailRepaired, TransactionCommitted, UnknownRecord, encodable_record, encoder
from .evolve import FOLD_VIEWS, CommitView, apply, apply_records, apply_transaction
from .registry import RECORD_TAGS, record_decoder, unknown_decoder

CHUNK_SIZE = 1 << 20
FILE_MODE = 0o664
"""Mode of every file created here: the user's umask applies, and none is ever world-writable."""
_HASH_KEY = b',"h":"'
_SUFFIX = len(_HASH_KEY) + 8 + 2  # ,"h":"xxxxxxxx"}
_TAIL = _SUFFIX + 1  # with the newline
_COMMIT = b'{"type":"TransactionCommitted"'
_NEWLINE_COMMIT = b"\n" + _COMMIT
_SEQ_AT = len(_COMMIT) + len(b',"seq":')
_FAULT = os.environ.get("PLAYBOOK_FAULT")


def fault(point: str) -> None:
    """Crash tests only: die by SIGKILL at `point` when the environment variable PLAYBOOK_FAULT names it.

    PLAYBOOK_FAULT is read once, at import; otherwise this is one comparison. Points:
    after-write, after-fsync, after-cut (here), before-snapshot (PlaybookRepository.append).
    """
    if point == _FAULT:
        os.kill(os.getpid(), signal.SIGKILL)


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


def line_hash(running: int, prefix: bytes) -> int:
    """The `h` of a line: the CRC-32 of the whole file up to this line's `,"h":` field.

    So every line is checked on its own (from the running value before it), and a whole
    transaction with one `crc32` over its bytes. It finds cuts, damage, edits and where
    they are; like any unkeyed checksum it does not stop a deliberate rewrite.
    """
    return zlib.crc32(prefix, running)


def running_after(line: bytes, h: int) -> int:
    """The file's running CRC-32 after `line` (with its newline), given the line's own `h`."""
    return zlib.crc32(line[-_TAIL:], h)


def encode_line(record: msgspec.Struct, running: int) -> tuple[bytes, int]:
    """The line for `record` after a file whose running CRC-32 is `running`, and the running value after it."""
    prefix = encoder.encode(record)[:-1]
    h = zlib.crc32(prefix, running)
    line = prefix + _HASH_KEY + b"%08x" % h + b'"}\n'
    return line, zlib.crc32(line[-_TAIL:], h)


def _encoded(record: RecordType, running: int) -> tuple[RecordType, bytes, int]:
    """(record as written, its line, running CRC after it). What JSON cannot hold (a lone surrogate, a
    number of thousands of digits inside a recorded request) is repaired, not fatal."""
    try:
        return (record, *encode_line(record, running))
    except ValueError:  # UnicodeEncodeError, or an integer too long to write
        record = encodable_record(record)
        return (record, *encode_line(record, running))


def _commit_record(seq: int, tx: str, at: str, events: int, cause: Cause) -> TransactionCommitted:
    return TransactionCommitted(seq=seq, tx=tx, at=at, events=events, source=cause.source, session=cause.session,
                                model=cause.model, analysis=cause.analysis, reasoning=cause.reasoning, note=cause.note)


def split_hash(line: bytes) -> tuple[bytes, int] | None:
    """(prefix, h) of a line as `encode_line` wrote it (`h` is last and fixed-width), or None."""
    line = line if line.endswith(b"\n") else line + b"\n"
    if len(line) < _TAIL or line[-_TAIL:-11] != _HASH_KEY or line[-3:] != b'"}\n':
        return None
    try:
        return line[:-_TAIL], int(line[-11:-3], 16)
    except ValueError:
        return None


def decode_line(line: bytes) -> TransactionCommitted | Event | UnknownRecord:
    """Decode one line; a well-formed record of a type this version does not know is an UnknownRecord."""
    try:
        return record_decoder.decode(line)
    except msgspec.ValidationError:
        unknown = unknown_decoder.decode(line)  # raises when it is not even a record
        if unknown.type in RECORD_TAGS:
            raise
        return unknown


fold_decoder = msgspec.json.Decoder(FOLD_VIEWS)


class WholeLines:
    """The rest of a binary file as (buffer, size) pairs: `buffer[:size]` is whole lines.

    One buffer is reused and refilled with `readinto`, so nothing is copied but the
    unfinished last line; a pair is valid until the next one is asked for, and a
    caller's memoryviews of it must be released by then. After iteration, `leftover`
    is the length of the bytes after the last newline.
    """

    def __init__(self, handle, chunk_size: int | None = None) -> None:
        self.handle = handle
        self.chunk_size = chunk_size or CHUNK_SIZE
        self.leftover = 0

    def __iter__(self) -> Iterator[tuple[bytearray, int]]:
        buffer = bytearray(self.chunk_size)
        keep = 0
        while True:
            if keep == len(buffer):  # one line longer than the buffer
                buffer.extend(bytes(len(buffer)))
            with memoryview(buffer) as view:
                read = self.handle.readinto(view[keep:])
            if not read:
                break
            filled = keep + read
            cut = buffer.rfind(b"\n", 0, filled) + 1
            if cut:
                yield buffer, cut
                buffer[: filled - cut] = buffer[cut:filled]
            keep = filled - cut
        self.leftover = keep


class _Recheck(Exception):
    """The fast path met something it does not vouch for: rescan strictly from the last commit.

    `resume`, when set, is the file offset after which the fast path may take over again.
    """

    def __init__(self, resume: int | None = None) -> None:
        super().__init__(resume)
        self.resume = resume


_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)


class LogReader:
    """Iterates the committed transactions of a log file from `start`, strictly.

    After iteration, `position` is just after the last committed transaction and
    `torn` describes any unfinished tail. Streams the file in chunks.

    Fast path: a chunk is decoded with one `decode_lines` call and each transaction is
    checked with one `crc32` over its bytes against its commit line's `h`. Anything
    unexpected sends the reader back to the last commit to rescan line by line, which
    checks every line's `h`, `seq` and transaction and names the first damaged line.
    """

    def __init__(self, path: Path, start: Position = Position(), strict: bool = False) -> None:
        self.path = path
        self.position = start
        self.strict = strict
        self.torn: TornTail | None = None

    def __iter__(self) -> Iterator[Transaction]:
        try:
            handle = open(self.path, "rb")
        except (FileNotFoundError, NotADirectoryError):
            return
        with handle:
            if not self.strict:
                try:
                    handle.seek(self.position.offset)
                    yield from self._fast(handle)
                    if self.torn is None:
                        return
                    self.torn = None  # the strict scan below tells a torn write from a damaged commit line
                except _Recheck:
                    pass
            handle.seek(self.position.offset)
            yield from self._strict(handle)

    def _chunks(self, handle) -> Iterator[bytes]:
        """The file from the handle's position in chunks of whole lines; sets `_leftover`."""
        leftover = b""
        while True:
            data = handle.read(CHUNK_SIZE)
            if not data:
                break
            data = leftover + data
            cut = data.rfind(b"\n") + 1
            chunk, leftover = data[:cut], data[cut:]
            if chunk:
                yield chunk
        self._leftover = len(leftover)

    def _finish(self, end: int) -> None:
        if end > self.position.offset:
            self.torn = TornTail(offset=self.position.offset, length=end - self.position.offset,
                                 line=self.position.line + 1)

    def _fast(self, handle) -> Iterator[Transaction]:
        # No Python work per line: commit lines are found by byte search (a line that starts
        # with _COMMIT; inside a JSON string its quotes would be escaped) and mapped to records
        # by counting newlines; one crc32 over the transaction's bytes checks all its lines.
        running = int(self.position.hash, 16) if self.position.hash else 0
        offset = self.position.offset  # file offset of the current chunk
        pending: list = []
        crc32 = zlib.crc32
        for chunk in self._chunks(handle):
            try:
                records = record_decoder.decode_lines(chunk)
            except _DECODE_ERRORS:
                raise _Recheck from None
            if len(records) != chunk.count(b"\n"):
                raise _Recheck
            view = memoryview(chunk)
            begin = 0  # `running` covers the file up to here in `chunk`
            first = 0  # index in `records` of the line starting at `begin`
            search = 0
            while (at := chunk.find(_COMMIT, search)) >= 0:
                search = at + 1
                if at and chunk[at - 1] != 10:
                    continue  # not at the start of a line
                end = chunk.index(b"\n", at) + 1
                # The commit's seq (its second field) says which record it is: no newline counting.
                digits = at + _SEQ_AT
                try:
                    index = first + int(chunk[digits : chunk.index(b",", digits)]) - self.position.seq - 1 - len(pending)
                    if index < first:
                        raise _Recheck
                    commit = records[index]
                except (ValueError, IndexError):
                    raise _Recheck from None
                events = pending + records[first:index] if pending else records[first:index]
                seq = self.position.seq
                try:
                    h = int(chunk[end - 11 : end - 3], 16)
                except ValueError:
                    raise _Recheck from None
                if (type(commit) is not TransactionCommitted or h != crc32(view[begin : end - _TAIL], running)
                        or chunk[end - _TAIL : end - 11] != _HASH_KEY or commit.events != len(events)
                        or commit.seq != seq + len(events) + 1
                        or (events and (events[0].seq != seq + 1 or events[0].tx != commit.tx
                                        or events[-1].tx != commit.tx))):
                    raise _Recheck
                running = crc32(view[end - _TAIL : end], h)
                end_pos = Position(offset + end, commit.seq, "%08x" % running, self.position.line + len(events) + 1)
                transaction = Transaction(events, commit, self.position, end_pos)
                self.position = end_pos
                pending, begin, first, search = [], end, index + 1, end
                yield transaction
            if first < len(records):
                pending = pending + records[first:] if pending else records[first:]
                running = crc32(view[begin:], running)
            offset += len(chunk)
        self._finish(offset + self._leftover)

    def fold(self, state: PlaybookState, until: int | None = None) -> bool:
        """Apply the committed transactions from `position` on to `state`, in place.

        Stops before a transaction that ends after byte `until` and returns True; otherwise
        reads to the end (then `torn` is set as by iteration) and returns False. Same checks
        as iteration: the fast path checks each chunk with one `crc32` against its last
        commit line; a chunk it does not vouch for is scanned line by line, strictly, and
        the fast path resumes after it.
        """
        try:
            handle = open(self.path, "rb", buffering=0)
        except (FileNotFoundError, NotADirectoryError):
            return False
        with handle:
            while True:
                handle.seek(self.position.offset)
                resume = None
                if not self.strict:
                    try:
                        stopped = self._fold_fast(handle, state, until)
                        if stopped or self.torn is None:
                            return stopped
                        # The fast path finds commit lines by their first bytes: a tail it could not close
                        # is a write that never finished, or a damaged commit line. The strict scan tells.
                        self.torn = None
                    except _Recheck as recheck:
                        resume = recheck.resume
                    handle.seek(self.position.offset)
                for transaction in self._strict(handle):
                    if until is not None and transaction.end.offset > until:
                        self.position = transaction.start
                        return True
                    apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
                    if resume is not None and transaction.end.offset >= resume:
                        break
                else:
                    return False

    def _fold_fast(self, handle, state: PlaybookState, until: int | None) -> bool:
        # Per chunk: one decode_lines into the fold's light views, one crc32 up to the last
        # commit line (the writer chained every byte before it, so any damage shows), and a
        # count check that the commit sits where its seq says. Nothing is applied before its
        # chunk is checked, so a recheck resumes from `position` with the state consistent.
        running = int(self.position.hash, 16) if self.position.hash else 0
        offset = self.position.offset  # file offset of the buffer's first byte
        pending: list = []  # records of a transaction whose commit is in a later chunk
        lines = WholeLines(handle)
        for buffer, size in lines:
            stop = until is not None and offset + size > until
            if stop:
                size = buffer.rfind(b"\n", 0, max(until - offset, 0)) + 1  # type: ignore[operator]
            with memoryview(buffer) as view:
                chunk = view[:size]
                try:
                    decoded = fold_decoder.decode_lines(chunk)
                except _DECODE_ERRORS:
                    raise _Recheck(offset + size) from None
                if pending:  # ours (a slice or an earlier chunk's list): extend it, a giant transaction stays linear
                    pending.extend(decoded)
                    records = pending
                else:
                    records = decoded
                at = buffer.rfind(_NEWLINE_COMMIT, 0, size) + 1
                if at or (size and buffer.startswith(_COMMIT)):
                    end = buffer.index(b"\n", at) + 1
                    index = len(records) - 1 - buffer.count(b"\n", end, size)
                    commit = records[index] if index >= 0 else None
                    try:
                        h = int(buffer[end - 11 : end - 3], 16)
                    except ValueError:
                        raise _Recheck(offset + size) from None
                    if (type(commit) is not CommitView or commit.seq != self.position.seq + index + 1
                            or buffer[end - _TAIL : end - 11] != _HASH_KEY
                            or h != zlib.crc32(chunk[: end - _TAIL], running)):
                        raise _Recheck(offset + size)
                    apply_records(state, records[: index + 1])
                    running = zlib.crc32(chunk[end - _TAIL : end], h)
                    self.position = Position(offset + end, commit.seq, "%08x" % running, self.position.line + index + 1)
                    pending = records[index + 1 :]
                    running = zlib.crc32(chunk[end:], running)
                else:
                    pending = records
                    running = zlib.crc32(chunk, running)
                del chunk
            if stop:
                return True
            offset += size
        self._finish(offset + lines.leftover)
        return False

    def _strict(self, handle) -> Iterator[Transaction]:
        pos = self.position
        pending: list = []
        pending_start = pos
        offset, line_no = pos.offset, pos.line
        running = int(pos.hash, 16) if pos.hash else 0
        expected_seq = pos.seq + 1
        damage: tuple[int, int, str] | None = None  # (line, offset, reason) of the first bad line
        for chunk in self._chunks(handle):
            lines = chunk.split(b"\n")
            lines.pop()
            for raw in lines:
                line_no += 1
                line_offset = offset
                offset += len(raw) + 1
                try:
                    record = decode_line(raw)
                except _DECODE_ERRORS as exc:
                    if damage is None:
                        damage = (line_no, line_offset, f"undecodable record: {exc}")
                    continue
                is_commit = type(record) is TransactionCommitted
                if damage is not None:
                    if is_commit:
                        raise CorruptLogError(self.path, *damage)
                    continue
                hashed = split_hash(raw)
                if hashed is None or hashed[1] != zlib.crc32(hashed[0], running):
                    damage = (line_no, line_offset, "hash does not match the line and the bytes before it")
                    if is_commit:
                        raise CorruptLogError(self.path, *damage)
                    continue
                running = zlib.crc32(raw[-_SUFFIX:] + b"\n", hashed[1])
                if record.seq != expected_seq:
                    damage = (line_no, line_offset, f"sequence {record.seq} where {expected_seq} was expected")
                    if is_commit:
                        raise CorruptLogError(self.path, *damage)
                    continue
                expected_seq += 1
                if not is_commit:
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
                end_pos = Position(offset=offset, seq=record.seq, hash="%08x" % running, line=line_no)
                transaction = Transaction(events=pending, commit=record, start=pending_start, end=end_pos)
                pending, pending_start = [], end_pos
                self.position = end_pos
                yield transaction
        self._finish(offset + self._leftover)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fold_log(
    path: Path, state: PlaybookState, start: Position = Position(), until: int | None = None
) -> tuple[PlaybookState, Position, TornTail | None]:
    """Fold the committed transactions after `start` (and ending by byte `until`) into `state`, in place.

    Returns the state, the position after the last transaction folded, and the torn tail when
    the fold read to the end of the file (no `until`, or one at or past the end of the tail).
    """
    reader = LogReader(path, start)
    stopped = reader.fold(state, until)
    torn = reader.torn
    if stopped or (torn is not None and until is not None and until < torn.offset + torn.length):
        torn = None  # the caller asked for the log up to `until`, not for what lies after it
    return state, reader.position, torn


def hash_at(path: Path, position: Position) -> bool:
    """True when the file's running CRC-32 just after the line ending at `position.offset` is
    `position.hash`, read from that line's own `h` (O(1): reads its last 17 bytes)."""
    if position.offset == 0:
        return position.hash == ""
    if position.offset < _TAIL:
        return False
    try:
        with open(path, "rb") as handle:
            handle.seek(position.offset - _TAIL)
            tail = handle.read(_TAIL)
    except OSError:
        return False
    hashed = split_hash(tail)
    return hashed is not None and "%08x" % running_after(tail, hashed[1]) == position.hash


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
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
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
            with os.fdopen(os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as handle:
                handle.write(cut)
                handle.flush()
                os.fsync(handle.fileno())
            fault("after-cut")
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
        running = int(position.hash, 16) if position.hash else 0
        lines: list[bytes] = []
        stamped: list[Event] = []
        for event in events:
            seq += 1
            event, line, running = _encoded(msgspec.structs.replace(event, seq=seq, tx=tx, at=at), running)
            stamped.append(event)
            lines.append(line)
        seq += 1
        commit, line, running = _encoded(_commit_record(seq, tx, at, len(stamped), cause), running)
        lines.append(line)
        payload = b"".join(lines)
        created = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
            try:
                written = os.write(fd, payload)
                while written < len(payload):  # a short write to a regular file: finish it
                    written += os.write(fd, payload[written:])
                fault("after-write")
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                _fsync_dir(self.path.parent)
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path}: {exc.strerror or exc}") from exc
        fault("after-fsync")
        for event in stamped:
            apply(state, event)
        state.seq = seq
        end = Position(offset=position.offset + len(payload), seq=seq, hash="%08x" % running,
                       line=position.line + len(lines))
        return Committed(events=stamped, commit=commit, state=state, position=end)


class InMemoryEventStore:
    """The same contract as `JsonlEventStore`, kept in memory: for tests and previews."""

    def __init__(self) -> None:
        self.transactions: list[Transaction] = []

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
            stamped.append(_encoded(msgspec.structs.replace(event, seq=seq, tx=tx, at=at), 0)[0])
            apply(state, stamped[-1])
        seq += 1
        state.seq = seq
        commit = _encoded(_commit_record(seq, tx, at, len(stamped), cause), 0)[0]
        end = Position(offset=seq, seq=seq, hash="", line=seq)
        self.transactions.append(Transaction(events=stamped, commit=commit, start=position, end=end))
        return Committed(events=stamped, commit=commit, state=state, position=end)
