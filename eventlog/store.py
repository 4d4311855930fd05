"""The append-only JSONL log of transactions: reading it (strict scan, fast fold) and writing it.

The line format and its chain are `eventlog.logformat`'s. A transaction is its event
lines followed by a `TransactionCommitted` line, written with one `write` under an
exclusive lock and `fsync`ed before `append` returns.

Readers never lock and never write: they see whole committed transactions only,
and a torn tail (a crash mid-write) is invisible to them. A damaged line followed
by committed data is corruption: reading stops with `CorruptLogError`. Only a
writer, holding the lock, cuts a torn tail, after copying the bytes it cuts to a
file beside the log; the transaction it then writes records that it did so.
Safe across processes on one machine; not NFS-safe (it relies on `flock`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import msgspec

from .domain import PlaybookState
from .errors import CorruptLogError
from .events import Cause, Event, TransactionCommitted
from .evolve import FOLD_VIEWS, CommitView, apply_records, apply_transaction
from .logformat import (COMMIT, DECODE_ERRORS, NEWLINE_COMMIT, TAIL, check_line, decode_line, encode_line, extend,
                        h_at, line_hash, running_after, split_hash, start, text)
from .positions import Committed, Position, TornTail, Transaction, Written
from .registry import record_decoder

__all__ = [  # the line format's helpers and the position types are used through the store by its callers
    "Committed", "Position", "TornTail", "Transaction", "Written",
    "decode_line", "encode_line", "line_hash", "running_after", "split_hash",
]

CHUNK_SIZE = 1 << 20
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

Decider = Callable[[PlaybookState], list[Event]]


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def new_transaction() -> tuple[str, str]:
    """(id, time) for a transaction about to be written: 16 hex digits, and UTC now."""
    return uuid.uuid4().hex[:16], utc_now()


def commit_record(seq: int, tx: str, at: str, events: int, cause: Cause) -> TransactionCommitted:
    return TransactionCommitted(seq=seq, tx=tx, at=at, events=events, source=cause.source, session=cause.session,
                                model=cause.model, analysis=cause.analysis, reasoning=cause.reasoning, note=cause.note)


fold_decoder = msgspec.json.Decoder(FOLD_VIEWS)


class WholeLines:
    """The rest of a binary file as (buffer, size) pairs: `buffer[:size]` is whole lines.

    One buffer is reused and refilled with `readinto`, so nothing is copied but the
    unfinished last line; a pair is valid until the next one is asked for, and a
    caller's memoryviews of it must be released by then. After iteration, `leftover`
    is the length of the bytes after the last newline.
    """

    def __init__(self, handle: Any, chunk_size: int | None = None) -> None:  # a binary file with readinto
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


class LogReader:
    """Reads the committed transactions of a log file from `start`: iterated, or folded into a state.

    After reading, `position` is just after the last committed transaction and `torn`
    describes any unfinished tail. Streams the file in chunks.

    Two roads over the same bytes. The fast one (`_fast`) decodes a chunk of whole lines
    with one `decode_lines` call and checks it up to its last commit line with one chain
    check against that line's `h`, and that the commit sits where its seq says; iteration
    decodes full records, the fold light views. Anything unexpected sends the reader back
    to the last commit for the strict one (`_strict`), line by line, which checks every
    line's `h`, `seq` and transaction and names the first damaged line; the fast road
    resumes after the chunk it could not vouch for.
    """

    def __init__(self, path: Path, start: Position = Position(), strict: bool = False) -> None:
        self.path = path
        self.position = start
        self.strict = strict
        self.torn: TornTail | None = None
        self._stopped = False
        self._leftover = 0

    def __iter__(self) -> Iterator[Transaction]:
        try:
            handle = open(self.path, "rb", buffering=0)
        except (FileNotFoundError, NotADirectoryError):
            return
        with handle:
            while True:
                resume = None
                if not self.strict:
                    try:
                        for records, buffer, offset in self._fast(handle, record_decoder, TransactionCommitted, None):
                            yield from self._transactions(records, buffer, offset)
                        if self.torn is None:
                            return
                        self.torn = None  # the strict scan tells a torn write from a damaged commit line
                    except _Recheck as recheck:
                        resume = recheck.resume
                handle.seek(self.position.offset)
                for transaction in self._strict(handle):
                    yield transaction
                    if resume is not None and transaction.end.offset >= resume:
                        break
                else:
                    return

    def fold(self, state: PlaybookState, until: int | None = None) -> bool:
        """Apply the committed transactions from `position` on to `state`, in place.

        Stops before a transaction that ends after byte `until` and returns True; otherwise
        reads to the end (then `torn` is set as by iteration) and returns False. Same checks
        as iteration; nothing of a chunk is applied before the chunk is checked.
        """
        try:
            handle = open(self.path, "rb", buffering=0)
        except (FileNotFoundError, NotADirectoryError):
            return False
        with handle:
            while True:
                resume = None
                if not self.strict:
                    try:
                        for records, _buffer, _offset in self._fast(handle, fold_decoder, CommitView, until):
                            apply_records(state, records)
                        if self._stopped or self.torn is None:
                            return self._stopped
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

    def _fast(self, handle: IO[bytes], decoder: Any, commit_type: type[Any], until: int | None
              ) -> Iterator[tuple[list[Any], bytearray, int]]:
        """Checked runs of whole transactions: (their records, the buffer holding their last lines, its offset).

        Per chunk: one decode_lines, one chain check up to the last commit line (the writer
        chained every byte before it, so any damage shows), and a count check that the commit
        sits where its seq says. `position` moves past a run once its consumer has it; a run's
        first transaction may have begun in an earlier chunk. Sets `_stopped` when it stops at
        `until`, `torn` when it reads to an unfinished tail.
        """
        handle.seek(self.position.offset)
        self._stopped = False
        running = start(self.position.hash)
        offset = self.position.offset  # file offset of the buffer's first byte
        pending: list[Any] = []  # records of a transaction whose commit is in a later chunk
        lines = WholeLines(handle)
        for buffer, size in lines:
            stop = until is not None and offset + size > until
            if stop:
                size = buffer.rfind(b"\n", 0, max(until - offset, 0)) + 1  # type: ignore[operator]
            with memoryview(buffer) as view:
                chunk = view[:size]
                try:
                    decoded = decoder.decode_lines(chunk)
                except DECODE_ERRORS:
                    raise _Recheck(offset + size) from None
                if pending:  # ours (a slice or an earlier chunk's list): extend it, a giant transaction stays linear
                    pending.extend(decoded)
                    records = pending
                else:
                    records = decoded
                at = buffer.rfind(NEWLINE_COMMIT, 0, size) + 1
                if at or (size and buffer.startswith(COMMIT)):
                    end = buffer.index(b"\n", at) + 1
                    index = len(records) - 1 - buffer.count(b"\n", end, size)
                    commit: Any = records[index] if index >= 0 else None
                    h = h_at(buffer, end)
                    if (h is None or type(commit) is not commit_type or commit.seq != self.position.seq + index + 1
                            or h != extend(chunk[: end - TAIL], running)):
                        raise _Recheck(offset + size)
                    running = extend(chunk[end - TAIL : end], h)
                    after = Position(offset + end, commit.seq, text(running), self.position.line + index + 1)
                    yield records[: index + 1], buffer, offset
                    self.position = after
                    pending = records[index + 1 :]
                    running = extend(chunk[end:], running)
                else:
                    pending = records
                    running = extend(chunk, running)
                del chunk
            if stop:
                self._stopped = True
                return
            offset += size
        self._finish(offset + lines.leftover)

    def _transactions(self, records: list[Any], buffer: bytearray, offset: int) -> Iterator[Transaction]:
        """Split a checked run into its transactions; their commit lines are the buffer's, in order."""
        begin, line = self.position, self.position.line
        events: list[Any] = []
        search = 0
        for record in records:
            if type(record) is not TransactionCommitted:
                events.append(record)
                continue
            at = buffer.find(COMMIT, search)
            while at > 0 and buffer[at - 1] != 10:
                at = buffer.find(COMMIT, at + 1)
            end = buffer.index(b"\n", at) + 1
            search = end
            line += len(events) + 1
            h = h_at(buffer, end)
            assert h is not None  # `_fast` checked the run up to its last commit line
            running = extend(buffer[end - TAIL : end], h)
            finish = Position(offset + end, record.seq, text(running), line)
            self.position = finish
            yield Transaction(events, record, begin, finish)
            begin, events = finish, []

    def _chunks(self, handle: IO[bytes]) -> Iterator[bytes]:
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

    def _finish(self, end: int, damage: tuple[int, int, str] | None = None) -> None:
        if end > self.position.offset:
            line, offset, reason = damage or (0, 0, None)
            self.torn = TornTail(offset=self.position.offset, length=end - self.position.offset,
                                 line=self.position.line + 1, damage=reason, damage_line=line, damage_offset=offset)

    def _strict(self, handle: IO[bytes]) -> Iterator[Transaction]:
        pos = self.position
        pending: list[Any] = []
        pending_start = pos
        offset, line_no = pos.offset, pos.line
        running = start(pos.hash)
        expected_seq = pos.seq + 1
        damage: tuple[int, int, str] | None = None  # (line, offset, reason) of the first bad line
        commit_damaged = False  # a whole commit line does not read back
        for chunk in self._chunks(handle):
            lines = chunk.split(b"\n")
            lines.pop()
            for raw in lines:
                line_no += 1
                line_offset = offset
                offset += len(raw) + 1
                try:
                    record = decode_line(raw)
                except DECODE_ERRORS as exc:
                    if damage is None:
                        damage = (line_no, line_offset, f"undecodable record: {exc}")
                    commit_damaged = commit_damaged or _whole_commit_line(raw)
                    continue
                is_commit = type(record) is TransactionCommitted
                if damage is not None:
                    if is_commit:
                        raise CorruptLogError(self.path, *damage)
                    continue
                after = check_line(raw, running)
                if after is None:
                    damage = (line_no, line_offset, "hash does not match the line and the bytes before it")
                    if is_commit:
                        raise CorruptLogError(self.path, *damage)
                    continue
                running = after
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
                end_pos = Position(offset=offset, seq=record.seq, hash=text(running), line=line_no)
                transaction = Transaction(events=pending, commit=record, start=pending_start, end=end_pos)
                pending, pending_start = [], end_pos
                self.position = end_pos
                yield transaction
        # A write cut short never completes its commit line: a whole one that does not read back was damaged.
        self._finish(offset + self._leftover, damage if commit_damaged else None)


def _whole_commit_line(raw: bytes) -> bool:
    """True when `raw` looks like one commit line written whole: it starts as one, holds no other record's
    start, and ends with its `h`. Two unfinished writes run together never look like that."""
    return raw.startswith(COMMIT) and raw.count(b'{"type":"') == 1 and split_hash(raw) is not None


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
    """True when the line ending at `position.offset` is the whole commit record of seq `position.seq`,
    its `h` chains from the line before it, and the file's chain value after it is `position.hash`.

    Reads that line and the 17 bytes before it, whatever the length of the log: a position
    passes only when a writer could append after it without building on a damaged line."""
    if position.offset == 0:
        return position.hash == ""
    if position.offset < TAIL:
        return False
    try:
        with open(path, "rb") as handle:
            line, before = _line_ending_at(handle, position.offset)
    except OSError:
        return False
    hashed = split_hash(line)
    if hashed is None or text(running_after(line, hashed[1])) != position.hash:
        return False
    running = 0
    if before:
        previous = split_hash(before)
        if previous is None:
            return False
        running = running_after(before, previous[1])
    if check_line(line[:-1] if line.endswith(b"\n") else line, running) is None:
        return False
    try:
        commit = record_decoder.decode(line)
    except DECODE_ERRORS:
        return False
    return type(commit) is TransactionCommitted and commit.seq == position.seq


def _line_ending_at(handle: IO[bytes], end: int) -> tuple[bytes, bytes]:
    """(the line that ends at byte `end`, newline included; the last 17 bytes of the line before it, or b"")."""
    size = 4096
    while True:
        begin = max(end - size, 0)
        handle.seek(begin)
        block = handle.read(end - begin)
        if len(block) != end - begin or not block.endswith(b"\n"):
            return b"", b""
        at = block.rfind(b"\n", 0, len(block) - 1) + 1
        if at == 0 and begin > 0:
            size *= 4  # a line longer than the block: read further back
            continue
        if at == 0:
            return block, b""
        if at < TAIL and begin > 0:
            size += TAIL
            continue
        return block[at:], block[max(at - TAIL, 0):at]


def chained(data: bytes, start_hash: str) -> bool:
    """True when `data`, whole lines that follow a point whose chain value is `start_hash`, end with a
    line whose `h` covers every byte of them: one check, so a flipped byte anywhere in them shows."""
    hashed = split_hash(data[-TAIL:])
    return hashed is not None and line_hash(start(start_hash), memoryview(data)[:-TAIL]) == hashed[1]


def find_damage(path: Path, until: int | None = None) -> CorruptLogError | None:
    """The first damaged line of the log (before byte `until`, if given), found by a strict scan from its start.

    For readers that met a record they could not take (a jump to one transaction, a byte search):
    they report the damage where it is, with its line and byte, instead of a decoding error."""
    reader = LogReader(path, strict=True)
    try:
        for transaction in reader:
            if until is not None and transaction.end.offset >= until:
                return None
    except CorruptLogError as exc:
        return exc
    torn = reader.torn
    if torn is not None and torn.damage is not None and (until is None or torn.damage_offset < until):
        return CorruptLogError(path, torn.damage_line, torn.damage_offset, torn.damage)
    return None


def __getattr__(name: str) -> Any:
    """`JsonlEventStore`, the writer of this format, lives in `eventlog.jsonl`; it stays reachable from here."""
    if name == "JsonlEventStore":
        from .jsonl import JsonlEventStore

        return JsonlEventStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
