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

from eventlog.errors import CorruptLogError
from eventlog.events import HistoryRewritten
from eventlog.logformat import restamp, split_hash
from eventlog.positions import Position, Transaction
from eventlog.store import LogReader

from .merge import SharedHistoryRewritten
from .purge import STRUCTURAL, redact_prefix

_REDACTION = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")
_KEPT = frozenset(STRUCTURAL)
"""Fields a purge never redacts: they are the same in both lines."""


def _lines(path: Path, end: int) -> list[bytes]:
    with open(path, "rb") as handle:
        return handle.read(end).splitlines()


def _content(line: bytes) -> bytes | None:
    """A line without its chain value."""
    found = split_hash(line)
    return None if found is None else found[0]


def _redacted_from(ours: bytes, shared: bytes) -> list[str] | None:
    """The texts line `ours` redacted where line `shared` holds them, when it is that line with some of its
    strings' text replaced by redactions (the chain aside, and how each line spells its JSON); None when not."""
    mine, theirs = _content(ours), _content(shared)
    if mine is None or theirs is None:
        return None
    try:
        ours_record, shared_record = (msgspec.json.decode(part + b"}") for part in (mine, theirs))
    except msgspec.DecodeError:
        return None
    if not isinstance(ours_record, dict) or not isinstance(shared_record, dict):
        return None
    if any(ours_record.get(key) != shared_record.get(key) for key in _KEPT):
        return None
    texts: list[str] = []
    return texts if _value_redacted(ours_record, shared_record, texts) and texts else None


def _value_redacted(ours: object, shared: object, texts: list[str]) -> bool:
    """Whether `ours` is `shared` with some strings' text replaced by redactions, adding what they stood for."""
    if isinstance(ours, str) and isinstance(shared, str):
        return ours == shared or _string_redacted(ours, shared, texts)
    if isinstance(ours, dict) and isinstance(shared, dict):
        return len(ours) == len(shared) and all(
            _value_redacted(key, was, texts) and _value_redacted(value, was_value, texts)
            for (key, value), (was, was_value) in zip(ours.items(), shared.items()))
    if isinstance(ours, list) and isinstance(shared, list):
        return len(ours) == len(shared) and all(_value_redacted(a, b, texts) for a, b in zip(ours, shared))
    return type(ours) is type(shared) and ours == shared


def _string_redacted(ours: str, shared: str, texts: list[str]) -> bool:
    """Whether `ours` is `shared` with some of its text, at least a character each, replaced by redactions: each
    part between them found at its first place (enough for a pattern whose only wildcards are redactions),
    the last at the end. Adds what the redactions stood for (`_stood_for`)."""
    parts = _REDACTION.split(ours)
    if len(parts) == 1 or not shared.startswith(parts[0]):
        return False
    first, *middle, last = parts
    at, run, stood = len(first), 1, []
    for part in middle:
        if not part:  # redactions side by side: together they stood for a character each at least
            run += 1
            continue
        found = shared.find(part, at + run)
        if found < 0:
            return False
        stood.append((shared[at:found], run))
        at, run = found + len(part), 1
    end = len(shared) - len(last)
    if end < at + run or not shared.endswith(last):
        return False
    stood.append((shared[at:end], run))
    for text, count in stood:
        texts.extend(_stood_for(text, count))
    return True


def _stood_for(text: str, count: int) -> list[str]:
    """What `count` redactions side by side stood for in `text`. A redaction an earlier purge left stands for
    itself, no text this purge took out; the others, where the rest is one text repeated as often, stood for it
    each; else no telling where one ends, and each but the last is taken for one character (a copy holding any
    of them is not carried: refusing is safe, missing the text is not)."""
    earlier = len(_REDACTION.findall(text))
    rest = "".join(_REDACTION.split(text))
    count -= earlier
    if count <= 0 or not rest:
        return []
    unit = rest[: len(rest) // count]
    if unit and unit * count == rest:
        return [unit]
    return [*rest[: count - 1], rest[count - 1 :]]


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
    every difference a redaction a `HistoryRewritten` of ours names, or theirs' own transactions hold a text
    those redactions took out.

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


def carried_or_refused(ours: Path, shared: Path, theirs: Path,
                       refused: SharedHistoryRewritten) -> tuple[bytes, bytes]:
    """`carried` for a merge that was refused with `refused`; raises `refused` again unless it names a purge of
    ours and the purge carries (a log that no longer reads whole here was changed since the merge read it)."""
    if refused.side != "ours" or refused.purge is None:
        raise refused
    try:
        found = carried(ours, shared, theirs)
    except CorruptLogError:
        found = None
    if found is None:
        raise refused
    return found


__all__ = ["carried", "carried_or_refused"]
