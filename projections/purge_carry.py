"""A purge of ours carried to a copy that grew from the history it rewrote, so the two can merge again.

A purge rewrites lines in place and records which (`HistoryRewritten.seqs`); a copy that another machine
grew from the log as it was before (a sync's remote) still holds those lines unpurged, so the history both
share differs and the merge is refused. Where that copy is the last shared log (git's merge base) followed by
whole transactions of its own, and ours holds the same transactions as that shared log, line for line, with
every difference a redaction our purge recorded, the copy is ours' purged version of that history followed by
its own transactions, written again after it. That is what this builds; anything else is not a purge of
ours and stays refused, and so is a copy whose own transactions hold a text the purge took out of the shared
history (carried in, the merge would bring the text back: that copy is purged first).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from eventlog.events import HistoryRewritten
from eventlog.logformat import restamp, split_hash
from eventlog.positions import Position, Transaction
from eventlog.store import LogReader

from .purge import redact_prefix

_REDACTION = re.compile(rb"\[REDACTED:[a-z0-9\-]+\]")
_STRING_PART = rb'(?:[^"\\]|\\.)+?'
"""What a redaction stood for in a line: some of one JSON string's characters, never its end."""


def _lines(path: Path, end: int) -> list[bytes]:
    with open(path, "rb") as handle:
        return handle.read(end).splitlines()


def _content(line: bytes) -> bytes | None:
    """A line without its chain value."""
    found = split_hash(line)
    return None if found is None else found[0]


def _redacted_from(ours: bytes, shared: bytes) -> list[str] | None:
    """The texts line `ours` redacted where line `shared` holds them, when it is that line with some of its text
    replaced by redactions (the chain aside); None when it is not."""
    mine, theirs = _content(ours), _content(shared)
    if mine is None or theirs is None:
        return None
    parts = _REDACTION.split(mine)
    if len(parts) == 1:
        return None
    pattern = f"({_STRING_PART.decode()})".encode().join(re.escape(part) for part in parts)
    found = re.fullmatch(pattern, theirs, re.DOTALL)
    if found is None:
        return None
    try:  # (a text split inside an escape, where the line reads two ways, is not one this can tell)
        # A redaction of an earlier purge stands for itself: it is no text this one took out.
        return [msgspec.json.decode(b'"' + text + b'"', type=str) for text in found.groups()
                if _REDACTION.fullmatch(text) is None]
    except msgspec.DecodeError:
        return None


def _holds(lines: list[bytes], texts: set[str]) -> bool:
    """Whether a text of `texts` is in a line's texts, where a purge of it would redact it (the chain aside)."""
    def count(text: str) -> tuple[str, int]:
        return text, sum(text.count(one) for one in texts)

    for line in lines:
        content = _content(line)
        if content is None or redact_prefix(content, count)[1]:
            return True
    return False


def _seqs(transactions: list[Transaction]) -> list[int | None]:
    return [getattr(record, "seq", None) for t in transactions for record in (*t.events, t.commit)]


def carried(ours: Path, shared: Path, theirs: Path) -> tuple[bytes, bytes] | None:
    """(the shared log as ours' purge left it, `theirs` with ours' purge carried into it), or None when `theirs`
    is not `shared` followed by transactions of its own, or ours does not hold `shared`'s transactions with
    every difference a redaction a `HistoryRewritten` of ours names.

    Reads the three files; writes nothing. Raises `CorruptLogError` for a line of one that does not read."""
    with open(shared, "rb") as handle:
        shared_bytes = handle.read()
    with open(theirs, "rb") as handle:
        if handle.read(len(shared_bytes)) != shared_bytes:
            return None
    before = list(LogReader(shared, strict=True))
    reader = LogReader(ours, strict=True)
    mine: list[Transaction] = []
    purged: set[int] = set()
    for transaction in reader:
        if len(mine) < len(before):
            mine.append(transaction)
            continue
        purged.update(s for e in transaction.events if isinstance(e, HistoryRewritten) for s in e.seqs)
    if len(mine) < len(before) or not purged:
        return None
    if [t.commit.tx for t in mine] != [t.commit.tx for t in before] or _seqs(mine) != _seqs(before):
        return None
    end = mine[-1].end if mine else Position()
    if before and end.line != before[-1].end.line:
        return None
    shared_end = before[-1].end.offset if before else 0
    taken: set[str] = set()
    for seq, line, was in zip(_seqs(mine), _lines(ours, end.offset), _lines(shared, shared_end)):
        if _content(line) == _content(was):
            continue  # (the chain differs from the first purged line on: it was stamped again)
        texts = _redacted_from(line, was) if seq in purged else None
        if texts is None:
            return None
        taken.update(texts)
    with open(theirs, "rb") as handle:
        handle.seek(len(shared_bytes))
        if _holds(handle.read().splitlines(), taken):
            return None
    with open(ours, "rb") as handle:
        base = handle.read(end.offset)
    own = [(list(t.events), t.commit) for t in LogReader(theirs, before[-1].end if before else Position(),
                                                         strict=True)]
    tail, _after = restamp(own, end)
    return base, base + tail


__all__ = ["carried"]
