"""The strict reader's line-by-line checks: each line's chain value, seq and transaction, and the first damage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import CorruptLogError
from .events import TransactionCommitted
from .logformat import COMMIT, DECODE_ERRORS, check_line, decode_line, mismatch, split_hash, start, text
from .positions import Position, Transaction


class StrictScan:
    """The strict reader between two lines: the chain, the next seq, the open transaction, the first damage."""

    def __init__(self, path: Path, position: Position) -> None:
        self.path = path
        self.pending: list[Any] = []
        self.pending_start = position
        self.offset, self.line_no = position.offset, position.line
        self.running = start(position.hash)
        self.expected_seq = position.seq + 1
        self.damage: tuple[int, int, str] | None = None  # (line, offset, reason) of the first bad line
        self.commit_damaged = False  # a whole commit line does not read back

    def take(self, raw: bytes) -> Transaction | None:
        """Check the next line (without its newline); the transaction it completes when it is a sound commit.

        A damaged line is remembered; a commit line after damage, or one that does not
        close its transaction, raises `CorruptLogError`."""
        self.line_no += 1
        line_offset = self.offset
        self.offset += len(raw) + 1
        try:
            record = decode_line(raw)
        except DECODE_ERRORS as exc:
            if self.damage is None:
                self.damage = (self.line_no, line_offset, f"undecodable record: {exc}")
            self.commit_damaged = self.commit_damaged or whole_commit_line(raw)
            return None
        is_commit = type(record) is TransactionCommitted
        if self.damage is None:
            self._check(raw, record, line_offset)
        if self.damage is not None:
            if is_commit:
                raise CorruptLogError(self.path, *self.damage)
            return None
        if not is_commit:
            if self.pending and record.tx != self.pending[0].tx:
                self.damage = (self.line_no, line_offset, f"record of transaction {record.tx} inside {self.pending[0].tx}")
            else:
                self.pending.append(record)
            return None
        return self._commit(record, line_offset)

    def _check(self, raw: bytes, record: Any, line_offset: int) -> None:
        """A decoded line's `h` and `seq`; sets `damage` when either is wrong."""
        opens = not self.pending
        after = check_line(raw, self.running, opens)
        if after is None:
            self.damage = (self.line_no, line_offset, mismatch(raw, self.running, opens))
            return
        self.running = after
        if record.seq != self.expected_seq:
            self.damage = (self.line_no, line_offset, f"sequence {record.seq} where {self.expected_seq} was expected")
            return
        self.expected_seq += 1

    def _commit(self, record: TransactionCommitted, line_offset: int) -> Transaction:
        pending = self.pending
        if record.events != len(pending) or any(e.tx != record.tx for e in pending):
            raise CorruptLogError(
                self.path, self.line_no, line_offset,
                f"commit of {record.events} events follows {len(pending)} records of its transaction",
            )
        end = Position(offset=self.offset, seq=record.seq, hash=text(self.running), line=self.line_no)
        transaction = Transaction(events=pending, commit=record, start=self.pending_start, end=end)
        self.pending, self.pending_start = [], end
        return transaction


def whole_commit_line(raw: bytes) -> bool:
    """True when `raw` looks like one commit line written whole: it starts as one, holds no other record's
    start, and ends with its `h`. Two unfinished writes run together never look like that."""
    return raw.startswith(COMMIT) and raw.count(b'{"type":"') == 1 and split_hash(raw) is not None
