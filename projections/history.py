"""The history search: the committed transactions that mention an entry, or any entry merged into it,
found in one backward pass over the log by byte search, and what each event leaves of the entry.

`playbook history` reads these through `Timeline.history`; neither folds the log.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eventlog import events as ev
from eventlog import logformat
from eventlog.bytesearch import occurrences
from eventlog.checks import find_damage
from eventlog.domain import KeyPoint
from eventlog.errors import CorruptLogError
from eventlog.events import Event, TransactionCommitted
from eventlog.registry import json_string
from eventlog.store import Position, Transaction

_BACK_BLOCK = 1 << 20
"""A name stops being searched for at the end of the block that holds its creation: small blocks waste little."""
_REGEX_FROM = 4
"""This many needles sharing a literal start are one regular expression: `re` skips ahead to the literal in C at
about a quarter of the speed of `bytesearch`, so it pays from four needles on."""
_MAX_PASSES = 9
"""More passes over a range than this (names of many shapes) are one alternation of every needle, which `re`
tries at every quote: about nine searches' worth."""
_CREATING = (ev.KeyPointAdded, ev.KeyPointsMerged)
"""Events that give an entry a name never issued before."""


def damaged(path: Path, end: int) -> CorruptLogError:
    found = find_damage(path, end)
    return found or CorruptLogError(path, 0, end, "a transaction does not read back whole")


def mentioning(path: Path, name: str, follow: bool = True) -> dict[str, list[Transaction]]:
    """The committed transactions whose bytes hold `name`, or any entry merged into it, as a JSON string:
    per name, oldest first, each with the events of the lines that hold one of those names. Without
    `follow`, only `name`'s, from the last event that created it on: what became of it since.

    Reads the file once, backwards from its last commit line, in blocks that begin and end at transaction
    boundaries: a merge is met before the entries it merged, so their names join the search as soon as it
    is, and the blocks still ahead are searched for them too. A line it reads (one that holds a name, or
    the commit line of its transaction) that does not decode is damage, reported with its line and byte."""
    found: dict[str, dict[int, Transaction]] = {}
    needles: dict[str, bytes] = {}
    first = json_string(name)
    if first is None:
        return {}
    needles[name] = first
    followed = {name}
    try:
        handle = open(path, "rb")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    with handle:
        for low, data, begin, end in _blocks(handle):
            if not needles:
                break
            _search_block(path, data, begin, end, low, needles, followed, found, follow)
    return {entry: [by_start[key] for key in sorted(by_start)] for entry, by_start in found.items()}


def _blocks(handle: io.BufferedReader) -> Iterator[tuple[int, bytes, int, int]]:
    """(low, data, begin, end) from the end of the file's last whole commit line back to its start: `data` holds
    the file's bytes from `low`, `data[begin:end]` is whole transactions, and each block ends where the one
    handed out before it begins. What follows the last whole commit line is an unfinished tail, never handed out.

    Each byte is read once, in reads of one size (the allocator reuses their memory): a transaction cut by
    the start of a read is handed out on its own, its head from that read and its end kept from the read
    after it."""
    high = os.fstat(handle.fileno()).st_size
    kept, step, tail = b"", _BACK_BLOCK, True
    while high > 0:
        low = max(high - step, 0)
        handle.seek(low)
        chunk = handle.read(high - low)
        high = low
        if tail:  # the file's last bytes, and what of them a read before kept: cut at the last whole commit line
            chunk, kept = chunk + kept, b""
        first = 0 if low == 0 else _line_end(chunk, chunk.find(logformat.NEWLINE_COMMIT))
        last = _last_commit_end(chunk, low == 0)
        if last < 0 and low == 0 and not tail:  # the file's first transaction, its commit line in the bytes kept
            yield 0, chunk + kept, 0, len(chunk) + len(kept)
            return
        if first < 0 or last < 0:  # no whole commit line: one transaction (or the tail) longer than the read
            kept, step = chunk + kept, step * 2
            continue
        if tail:
            tail = False
        elif kept or last < len(chunk):
            yield low + last, chunk[last:] + kept, 0, len(chunk) - last + len(kept)
        if first < last:
            yield low, chunk, first, last
        kept, step = chunk[:first], _BACK_BLOCK


def _line_end(data: bytes, newline: int) -> int:
    """The end of the line after the newline at `newline`: -1 when there is none, or it is not whole."""
    if newline < 0:
        return -1
    return data.find(b"\n", newline + 1) + 1 or -1


def _last_commit_end(data: bytes, whole: bool) -> int:
    """The end of the last whole commit line of `data` (-1 when it has none); `whole`: `data` begins the file."""
    at = data.rfind(logformat.NEWLINE_COMMIT)
    while at >= 0:
        end = data.find(b"\n", at + 1)
        if end >= 0:
            return end + 1
        at = data.rfind(logformat.NEWLINE_COMMIT, 0, at)  # an unfinished commit line: look before it
    if whole and data.startswith(logformat.COMMIT) and (end := data.find(b"\n")) >= 0:
        return end + 1
    return -1


def _search_block(path: Path, data: bytes, begin: int, end: int, low: int, needles: dict[str, bytes],
                  followed: set[str], found: dict[str, dict[int, Transaction]], follow: bool = True) -> None:
    """Add the transactions of `data[begin:end]` that hold a needle to `found`, each with the events of its lines
    that hold one; a merge into a name searched for adds its sources' names to `needles`, searched for in
    this block up to the merge's transaction and in every block before it.

    Only those lines and the commit lines are decoded: an event that concerns an entry holds its name as a
    JSON string, so no other line can. A source's search ends at the KeyPointAdded or KeyPointsMerged that
    created it: the log gives those a name past every one it issued before, so nothing earlier names it.
    The search for the entry asked about runs to the file's start, unless not `follow`ing merges."""
    lines: dict[int, tuple[Any, int]] = {}  # a line's start -> its record, its transaction's start
    transactions: dict[int, tuple[int, list[int]]] = {}  # a transaction's start -> its end, the lines read
    named: dict[str, set[int]] = {}  # an entry -> the starts of the transactions that name it
    created: list[str] = []
    pending = {needle: (entry, end) for entry, needle in needles.items()}
    while pending:
        arrived: dict[bytes, tuple[str, int]] = {}
        for at, needle in _hits(data, begin, {needle: until for needle, (_entry, until) in pending.items()}):
            entry = pending[needle][0]
            line = data.rfind(b"\n", begin, at) + 1 or begin
            if (known := lines.get(line)) is None:
                start, stop = _transaction_bounds(data, begin, line)
                known = lines[line] = _decode_line(path, data, line, low + stop), start
                transactions.setdefault(start, (stop, []))[1].append(line)
                if isinstance(known[0], _CREATING):
                    created.append(known[0].name)
            record, start = known
            named.setdefault(entry, set()).add(start)
            if follow and isinstance(record, ev.KeyPointsMerged) and record.name == entry:
                arrived.update(_sources(record, followed, needles, transactions[start][0]))
        pending = arrived
    read = {start: _transaction(path, data, start, stop, held, lines, low) for start, (stop, held) in transactions.items()}
    for entry, starts in named.items():
        found.setdefault(entry, {}).update((low + start, read[start]) for start in starts)
    first = next(iter(needles)) if follow else None  # the entry asked about: searched to the start
    for name in created:
        if name != first:
            needles.pop(name, None)


def _sources(merge: ev.KeyPointsMerged, followed: set[str], needles: dict[str, bytes], until: int
             ) -> dict[bytes, tuple[str, int]]:
    """The needles of `merge`'s sources not followed yet, each to be searched for up to `until` (the end of the
    merge's transaction) with the name it stands for; each added to `followed` and `needles`."""
    arrived: dict[bytes, tuple[str, int]] = {}
    for source in merge.sources:
        if source not in followed and (encoded := json_string(source)) is not None:
            followed.add(source)
            needles[source] = encoded
            arrived[encoded] = (source, until)
    return arrived


def _decode_line(path: Path, data: bytes, line: int, damage_before: int) -> Any:
    try:
        return logformat.decode_line(data[line : data.index(b"\n", line) + 1])
    except logformat.DECODE_ERRORS:
        raise damaged(path, damage_before) from None


def _transaction(path: Path, data: bytes, start: int, end: int, held: list[int], lines: dict[int, tuple[Any, int]],
                 low: int) -> Transaction:
    """The transaction `data[start:end]` with the events of the lines `held` (decoded in `lines`), and its commit."""
    last = max(data.rfind(b"\n", start, end - 1) + 1, start)
    commit = lines[last][0] if last in lines else _decode_line(path, data, last, low + end)
    if type(commit) is not TransactionCommitted:
        raise damaged(path, low + end)
    before = data.count(b"\n", start, last)  # the lines before the commit line: one event each, seqs in a row
    return Transaction(events=[lines[line][0] for line in sorted(held) if line != last], commit=commit,
                       start=Position(low + start, commit.seq - before - 1, "", 0), end=Position(low + end, commit.seq, "", 0))


def _hits(data: bytes, begin: int, needles: dict[bytes, int]) -> Iterator[tuple[int, bytes]]:
    """(offset, needle) of each occurrence of each needle in `data[begin:end]`, `end` being the needle's value.

    Each needle is one `bytesearch.occurrences` pass over its range; several that share their literal start
    (`"oth-`) and their end are one regular expression when that costs less than a pass each."""
    by_end: dict[int, list[bytes]] = {}
    for needle, end in needles.items():
        by_end.setdefault(end, []).append(needle)
    for end, same_end in by_end.items():
        for prefix, members in _groups(same_end).items():
            yield from _group_hits(data, begin, end, prefix, members)


def _groups(needles: list[bytes]) -> dict[bytes, list[bytes]]:
    """The needles by their literal start up to their slug's dash (`"oth-`), or all in one group when they
    would take more passes than one alternation costs (names of many shapes, e.g. imported ones)."""
    groups: dict[bytes, list[bytes]] = {}
    for needle in needles:
        dash = needle.find(b"-")
        groups.setdefault(needle[: dash + 1] if dash > 1 else needle, []).append(needle)
    passes = sum(1 if len(members) >= _REGEX_FROM else len(members) for members in groups.values())
    return groups if passes <= _MAX_PASSES else {b"": needles}


def _group_hits(data: bytes, begin: int, end: int, prefix: bytes, members: list[bytes]) -> Iterator[tuple[int, bytes]]:
    if len(members) < _REGEX_FROM and prefix:
        for needle in members:
            for at in occurrences(data, needle, begin, end):
                yield at, needle
        return
    longest_first = sorted(members, key=len, reverse=True)  # one needle may begin another: match the longer
    pattern = re.compile(re.escape(prefix) + b"(?:" + b"|".join(re.escape(m[len(prefix):]) for m in longest_first) + b")")
    for match in pattern.finditer(data, begin, end):
        yield match.start(), match.group()


def _transaction_bounds(data: bytes, begin: int, at: int) -> tuple[int, int]:
    """(start, end) in `data` of the transaction whose bytes include `at`, `data[begin:]` being whole ones."""
    line_start = data.rfind(b"\n", begin, at) + 1 or begin
    previous = data.rfind(logformat.NEWLINE_COMMIT, max(begin - 1, 0), line_start)
    if previous >= 0:
        start = data.index(b"\n", previous + 1) + 1
    elif begin == 0 and line_start > 0 and data.startswith(logformat.COMMIT):
        start = data.index(b"\n") + 1
    else:
        start = begin
    if not data.startswith(logformat.COMMIT, line_start):  # the transaction's commit line is further on
        line_start = data.find(logformat.NEWLINE_COMMIT, line_start) + 1
    return start, data.find(b"\n", line_start) + 1


def entry_after(kp: KeyPoint | None, event: Event, name: str) -> KeyPoint | None:
    match event:
        case ev.KeyPointAdded(text=text, helpful=h, harmful=hh) | ev.KeyPointImported(text=text, helpful=h, harmful=hh):
            return KeyPoint(name, text, h, hh)
        case ev.KeyPointsMerged(name=merged, text=text, helpful=h, harmful=hh):
            return KeyPoint(name, text, h, hh) if merged == name else None
        case ev.KeyPointUpdated(text=text) if kp is not None:
            return KeyPoint(name, text, kp.helpful, kp.harmful)
        case ev.KeyPointEvaluated(helpful=h, harmful=hh) | ev.CountersSet(helpful=h, harmful=hh) if kp is not None:
            return KeyPoint(name, kp.text, h, hh)
        case ev.KeyPointDeleted() | ev.KeyPointPruned():
            return None
    return kp
