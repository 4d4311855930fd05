"""Reading two copies of a log for a merge: where their bytes part, each side's transactions after a position, a
prefix folded. A log that is not clean to the end (damaged, unfinished, of a newer version) is `MergeRefused`."""

from __future__ import annotations

from pathlib import Path

import msgspec

from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError, PlaybookError
from eventlog.events import TransactionCommitted, UnknownRecord
from eventlog.merge import Tx
from eventlog.registry import record_decoder
from eventlog.store import LogReader, Position, fold_log

CHUNK = 1 << 20
"""How much of a log is read at once."""


class MergeRefused(PlaybookError):
    """The logs cannot be merged (damaged, hand-edited, unfinished, or a revert that would undo later work)."""


def log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def common_prefix(a: Path, b: Path) -> int:
    """How many leading bytes the two files share (read in chunks; a missing file is empty)."""
    try:
        left, right = open(a, "rb"), open(b, "rb")
    except FileNotFoundError:
        return 0
    shared = 0
    with left, right:
        while True:
            x, y = left.read(CHUNK), right.read(CHUNK)
            if x == y:
                if not x:
                    return shared
                shared += len(x)
                continue
            low, high = 0, min(len(x), len(y))
            while low < high:  # the longest common prefix of the two chunks
                middle = (low + high + 1) // 2
                if x[:middle] == y[:middle]:
                    low = middle
                else:
                    high = middle - 1
            return shared + low


def rest_after(path: Path, start: Position, label: str) -> tuple[list[Tx], Position]:
    """The committed transactions of `path` after `start`, checked line by line as every reader does."""
    reader = LogReader(path, start)
    try:
        transactions = list(reader)
    except CorruptLogError as exc:
        raise MergeRefused(f"{label} is not a clean log: line {exc.line}: {exc.reason}") from exc
    if reader.torn is not None:
        raise MergeRefused(f"{label} ends in an unfinished transaction ({reader.torn.length} bytes after line "
                           f"{reader.torn.line - 1}); let its writer finish, or run `playbook verify`")
    result = []
    for transaction in transactions:
        for event in transaction.events:
            if isinstance(event, UnknownRecord):
                raise MergeRefused(f"{label} holds a {event.type} record of a newer version of playbook "
                                   f"(seq {event.seq}); merge with that version")
        result.append(Tx(transaction.events, transaction.commit))  # type: ignore[arg-type]
    return result, reader.position


def fold_prefix(path: Path, until: int, label: str) -> tuple[PlaybookState, Position]:
    try:
        state, position, _torn = fold_log(path, PlaybookState(), until=until)
    except CorruptLogError as exc:
        raise MergeRefused(f"{label} is not a clean log: line {exc.line}: {exc.reason}") from exc
    return state, position


def last_commit(path: Path, offset: int) -> str:
    """The transaction id of the commit line ending at `offset` ("" when there is none)."""
    if offset <= 0:
        return ""
    with open(path, "rb") as handle:
        start = max(offset - (64 << 10), 0)
        handle.seek(start)
        block = handle.read(offset - start)
    line = block[block.rfind(b"\n", 0, len(block) - 1) + 1 :]
    try:
        record = record_decoder().decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ""
    return record.tx if isinstance(record, TransactionCommitted) else ""


def rest_until(path: Path, start: Position, end: int, label: str) -> tuple[set[str], Position]:
    """The transaction ids of `path` between `start` and byte `end`."""
    ids: set[str] = set()
    reader = LogReader(path, start)
    position = start
    try:
        for transaction in reader:
            if transaction.end.offset > end:
                break
            ids.add(transaction.commit.tx)
            position = transaction.end
    except CorruptLogError as exc:
        raise MergeRefused(f"{label} is not a clean log: line {exc.line}: {exc.reason}") from exc
    return ids, position
