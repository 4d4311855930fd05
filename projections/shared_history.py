"""Where two copies of a log part, and whether the history they share was rewritten there.

Two honest copies of a log part where one of them holds a transaction the other does not
hold at that place: each appended its own, or a merge wrote them again in another order. A
merge replaying a transaction at the place it already held, after the same bytes, writes
the same bytes again. So copies that part inside a transaction both hold at the same place
(the same id after the same bytes) hold two versions of one transaction: one was rewritten
after it was shared. Its chain proves nothing, since whoever rewrote the line could
recompute every `h` after it; what can say which side did is a copy that both come from (git's
merge base), the rewriting side's own `HistoryRewritten` record (a purge), or the anchors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from eventlog.events import Event, HistoryRewritten, TransactionCommitted
from eventlog.positions import Position, Transaction
from eventlog.store import LogReader

from .anchors import AnchorFileError, anchored_tag, line_tag


class Parting(NamedTuple):
    """The first line where a copy parts from another, inside transaction `tx` that both hold at that place."""

    line: int
    seq: int
    tx: str
    reference_line: bytes
    side_line: bytes


def _holding(path: Path, after: Position, offset: int) -> Transaction | None:
    """The committed transaction of `path` after position `after` that holds byte `offset` (None when the log
    ends before it). Raises `CorruptLogError` for a line that does not read."""
    for transaction in LogReader(path, after):
        if transaction.end.offset > offset:
            return transaction
    return None


def _line_at(path: Path, start: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(start)
        return handle.readline().rstrip(b"\n")


def parting(reference: Path, side: Path, after: Position, part: int) -> Parting | None:
    """Where `side` parts from `reference` at byte `part`, when that byte lies in a transaction both hold there.

    The two files hold the same bytes before `part`; `after` is a commit position of both at or
    before it. None when one of them holds there a transaction the other does not, or ends
    before it. Raises `CorruptLogError` for a line of either that does not read."""
    kept = _holding(reference, after, part)
    if kept is None:
        return None
    other = _holding(side, kept.start, part)  # the same bytes up to `part`: the same place in both
    if other is None or other.commit.tx != kept.commit.tx:
        return None
    with open(reference, "rb") as handle:
        handle.seek(kept.start.offset)
        before = handle.read(part - kept.start.offset)
    begin = kept.start.offset + before.rfind(b"\n") + 1
    below = before.count(b"\n")
    return Parting(line=kept.start.line + 1 + below, seq=kept.start.seq + 1 + below, tx=kept.commit.tx,
                   reference_line=_line_at(reference, begin), side_line=_line_at(side, begin))


def purged_at(transactions: Iterable[tuple[Sequence[Event], TransactionCommitted]], seq: int) -> HistoryRewritten | None:
    """The `HistoryRewritten` record among `transactions` that names line seq `seq` as rewritten."""
    for events, _commit in transactions:
        for event in events:
            if isinstance(event, HistoryRewritten) and seq in event.seqs:
                return event
    return None


def anchored_side(anchors: Path, found: Parting) -> str | None:
    """Which copy's line is not the one the anchors recorded, when exactly one is not: "reference" or "side".
    None when no anchor covers the line, or the anchors file does not read (it cannot say then)."""
    try:
        recorded = anchored_tag(anchors, found.line)
    except (AnchorFileError, OSError):
        return None
    if recorded is None:
        return None
    reference_kept = line_tag(found.reference_line) == recorded
    side_kept = line_tag(found.side_line) == recorded
    if reference_kept == side_kept:
        return None
    return "side" if reference_kept else "reference"


__all__ = ["Parting", "anchored_side", "parting", "purged_at"]
