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

from collections.abc import Callable, Iterator
from functools import lru_cache
from itertools import count
from operator import attrgetter, countOf, sub
from pathlib import Path
from typing import IO, Any

import msgspec

from .domain import PlaybookState
from .events import TransactionCommitted
from . import registry
from .evolve import apply_records, apply_transaction, commit_view, fold_views, fold_views_with
from .files import DIR_MODE, FILE_MODE, SHARED_FILES
from .logformat import (COMMIT, DECODE_ERRORS, NEWLINE_COMMIT, Link, Running, commit_hash_after, decode_line, digest_at,
                        encode_line, feed, run_hash, split_hash, start, upgraded)
from .positions import Committed, Position, TornTail, Transaction, Written
from .strict import StrictScan
from .wholelines import CHUNK_SIZE, WholeLines

__all__ = [  # the line format's helpers, the position types and the file modes are used through the store by its callers
    "CHUNK_SIZE", "Committed", "DIR_MODE", "FILE_MODE", "Position", "SHARED_FILES", "TornTail", "Transaction",
    "WholeLines", "Written", "decode_line", "encode_line", "split_hash",
]

@lru_cache(maxsize=1)
def fold_decoder() -> msgspec.json.Decoder[Any]:
    """Decodes a line as the fold reads it (`eventlog.evolve.fold_views`); built on first use and kept."""
    return msgspec.json.Decoder(fold_views())


Observer = Callable[[list[Any]], None]
"""Called with each run of whole transactions a fold applied: their records in log order, commits included."""


_seq_of = attrgetter("seq")


def _consecutive(records: list[Any], first: int) -> bool:
    """True when the records' seqs are `first`, `first + 1`, ...: counted in C, no list built."""
    return countOf(map(sub, map(_seq_of, records), count(first)), 0) == len(records)


@lru_cache(maxsize=8)
def _observing_decoder(whole: tuple[type, ...]) -> Any:
    return msgspec.json.Decoder(fold_views_with(whole))


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

    _apply = staticmethod(apply_records)

    def __init__(self, path: Path, start: Position = Position(), strict: bool = False) -> None:
        self.path = path
        self.position = start
        self.strict = strict
        self.torn: TornTail | None = None
        self._stopped = False
        self._leftover = 0

    def __iter__(self) -> Iterator[Transaction]:
        # A strict reader never decodes a chunk at once: it leaves the record decoder unbuilt.
        for run in self.roads(None if self.strict else registry.record_decoder(), TransactionCommitted):
            if isinstance(run, Transaction):
                yield run
            else:
                yield from self._transactions(*run)

    def roads(self, decoder: Any, commit_type: type[Any]) -> Iterator[tuple[list[Any], bytearray, int] | Transaction]:
        """From `position` on: the fast road's checked runs `(records, buffer, offset)`, decoded by `decoder`,
        and, from the last commit wherever the fast road cannot vouch for a chunk, the strict road's transactions.

        Every reader of whole transactions walks this one loop, so the two roads hand over the same way for all."""
        try:
            handle = open(self.path, "rb", buffering=0)
        except (FileNotFoundError, NotADirectoryError):
            return
        with handle:
            while True:
                resume = None
                if not self.strict:
                    try:
                        yield from self._fast(handle, decoder, commit_type, None)
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

    def fold(self, state: PlaybookState, until: int | None = None, observe: Observer | None = None,
             whole: tuple[type, ...] = (), seqs: bool = False) -> bool:
        """Apply the committed transactions from `position` on to `state`, in place.

        Stops before a transaction that ends after byte `until` and returns True; otherwise
        reads to the end (then `torn` is set as by iteration) and returns False. Same checks
        as iteration; nothing of a chunk is applied before the chunk is checked.
        `observe`, when given, sees the records of what was applied, in the same pass: the
        fold's light views (`evolve.commit_view()` for a commit), but the types in `whole` as the records
        themselves.
        `seqs`: every line's seq is checked too, so that a log rewritten with a recomputed chain
        gets the strict reader's verdict (the fast road alone vouches for the chain and each
        chunk's last commit; a whole-log check pays a little more for this).
        """
        try:
            handle = open(self.path, "rb", buffering=0)
        except (FileNotFoundError, NotADirectoryError):
            return False
        decoder = fold_decoder() if observe is None and not seqs else _observing_decoder(whole)
        commit_type = TransactionCommitted if TransactionCommitted in whole else commit_view()
        with handle:
            while True:
                resume = None
                if not self.strict:
                    try:
                        for records, _buffer, _offset in self._fast(handle, decoder, commit_type, until):
                            if seqs and not _consecutive(records, self.position.seq + 1):
                                raise _Recheck()  # nothing of the run applied: the strict road names the line
                            self._apply(state, records)
                            if observe is not None:
                                observe(records)
                        if self._stopped or self.torn is None:
                            return self._stopped
                        self.torn = None
                    except _Recheck as recheck:
                        resume = recheck.resume
                stopped = self._fold_strict(handle, state, until, observe, resume)
                if stopped is not None:
                    return stopped

    def _fold_strict(self, handle: IO[bytes], state: PlaybookState, until: int | None, observe: Observer | None,
                     resume: int | None) -> bool | None:
        """`fold` on the strict road from `position`: True when it stopped at `until`, False at the end of the
        file, None once it is past byte `resume` (the fast road takes over again)."""
        handle.seek(self.position.offset)
        for transaction in self._strict(handle):
            if until is not None and transaction.end.offset > until:
                self.position = transaction.start
                return True
            apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
            if observe is not None:
                observe([*transaction.events, transaction.commit])
            if resume is not None and transaction.end.offset >= resume:
                return None
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
        lines = WholeLines(handle, CHUNK_SIZE)
        for buffer, size in lines:
            stop = until is not None and offset + size > until
            if stop:
                size = buffer.rfind(b"\n", 0, max(until - offset, 0)) + 1  # type: ignore[operator]
            with memoryview(buffer) as view:
                chunk = view[:size]
                if not pending and not isinstance(running, Link) and digest_at(buffer, buffer.find(b"\n") + 1):
                    running = upgraded(running)  # the chain's SHA-256 part begins at this transaction
                records = _decoded(decoder, chunk, pending, offset + size)
                run = self._last_commit(buffer, chunk, size, records, running, commit_type, offset)
                if run is None:
                    pending = records
                    running = feed(running, chunk)
                else:
                    index, end, after = run
                    yield records[: index + 1], buffer, offset
                    self.position = after
                    pending = records[index + 1 :]
                    running = feed(start(after.hash), chunk[end:])
                del chunk
            if stop:
                self._stopped = True
                return
            offset += size
        self._finish(offset + lines.leftover)

    def _last_commit(self, buffer: bytearray, chunk: memoryview, size: int, records: list[Any], running: Running,
                     commit_type: type[Any], offset: int) -> tuple[int, int, Position] | None:
        """Where a chunk's checked run ends: (index of its last commit record, the byte after that line, the
        position there), or None when the chunk holds no commit line.

        The chain checked up to that line (one SHA-256 over each transaction, or one CRC-32 over
        the run in an old log's CRC-32 part: any damage shows) and a count check that the commit
        sits where its seq says; `_Recheck` when either fails.
        """
        at = buffer.rfind(NEWLINE_COMMIT, 0, size) + 1
        if not at and not (size and buffer.startswith(COMMIT)):
            return None
        end = buffer.index(b"\n", at) + 1
        index = len(records) - 1 - buffer.count(b"\n", end, size)
        commit: Any = records[index] if index >= 0 else None
        if type(commit) is not commit_type or commit.seq != self.position.seq + index + 1:
            raise _Recheck(offset + size)
        hash_text = self._chained(buffer, chunk, end, running)
        if hash_text is None:
            raise _Recheck(offset + size)
        return index, end, Position(offset + end, commit.seq, hash_text, self.position.line + index + 1)

    def _chained(self, buffer: bytearray, chunk: memoryview, end: int, running: Running) -> str | None:
        """The position hash after `chunk[:end]`, whole lines ending with a commit line, when the chain holds
        over them from `running`; else None."""
        return run_hash(buffer, chunk, end, running)

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
            finish = Position(offset + end, record.seq, commit_hash_after(buffer, end), line)
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
        scan = StrictScan(self.path, self.position)
        for chunk in self._chunks(handle):
            lines = chunk.split(b"\n")
            lines.pop()
            for raw in lines:
                transaction = scan.take(raw)
                if transaction is not None:
                    self.position = transaction.end
                    yield transaction
        # A write cut short never completes its commit line: a whole one that does not read back was damaged.
        self._finish(scan.offset + self._leftover, scan.damage if scan.commit_damaged else None)


def _decoded(decoder: Any, chunk: memoryview, pending: list[Any], resume: int) -> list[Any]:
    """A chunk's records after `pending` (extended in place: a giant transaction stays linear);
    `_Recheck` from `resume` when a line does not decode."""
    try:
        decoded: list[Any] = decoder.decode_lines(chunk)
    except DECODE_ERRORS:
        raise _Recheck(resume) from None
    if pending:  # ours (a slice or an earlier chunk's list)
        pending.extend(decoded)
        return pending
    return decoded


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
