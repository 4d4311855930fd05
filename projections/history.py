"""The history search: the committed transactions that mention an entry, or any entry merged into it,
found in one backward pass over the log by byte search, and what each event leaves of the entry.

`playbook history` reads these through `Timeline.history`; neither folds the log.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from eventlog import events as ev
from eventlog import logformat
from eventlog.bytesearch import occurrences
from eventlog.checks import find_damage
from eventlog.domain import KeyPoint
from eventlog.errors import CorruptLogError
from eventlog.events import Event, TransactionCommitted
from eventlog.registry import json_string
from eventlog.store import Position, Transaction

_WINDOW = 64 << 10
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


def mentioning(path: Path, name: str) -> dict[str, list[Transaction]]:
    """The committed transactions whose bytes hold `name`, or any entry merged into it, as a JSON string:
    per name, oldest first.

    Reads the file once, backwards from its last commit line, in blocks that begin and end at transaction
    boundaries: a merge is met before the entries it merged, so their names join the search as soon as it
    is, and the blocks still ahead are searched for them too. A transaction that does not decode is damage,
    reported with its line and byte."""
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
        high = _last_commit_end(handle)
        while high > 0:
            low, data, begin = _block_before(handle, high)
            _search_block(path, data, begin, low, needles, followed, found)
            high = low + begin
    return {entry: [by_start[key] for key in sorted(by_start)] for entry, by_start in found.items()}


def _last_commit_end(handle: IO[bytes]) -> int:
    """The end of the file's last whole commit line (0 when it has none): what follows is an unfinished tail."""
    size = os.fstat(handle.fileno()).st_size
    high, window = size, _WINDOW
    while high > 0:
        low = max(high - window, 0)
        handle.seek(low)
        data = handle.read(size - low)
        at = data.rfind(logformat.NEWLINE_COMMIT)
        if at >= 0:
            end = data.find(b"\n", at + 1)
            if end >= 0:
                return low + end + 1
            high = low + at + 1  # an unfinished commit line: look before it
        elif low == 0:
            if data.startswith(logformat.COMMIT) and (end := data.find(b"\n")) >= 0:
                return end + 1
            return 0
        else:
            high = low + len(logformat.NEWLINE_COMMIT)
        window *= 2
    return 0


def _block_before(handle: IO[bytes], high: int) -> tuple[int, bytes, int]:
    """(low, data, begin): the bytes from `low` to `high` (a transaction boundary), where `data[begin:]` is
    whole transactions and `low + begin` is the next boundary back (0 at the file's start)."""
    size = _BACK_BLOCK
    while True:
        low = max(high - size, 0)
        handle.seek(low)
        data = handle.read(high - low)
        if low == 0:
            return 0, data, 0
        at = data.find(logformat.NEWLINE_COMMIT)
        if at >= 0:
            end = data.find(b"\n", at + 1) + 1
            if 0 < end < len(data):
                return low, data, end
        size *= 2  # one transaction longer than the block


def _search_block(path: Path, data: bytes, begin: int, low: int, needles: dict[str, bytes], followed: set[str],
                  found: dict[str, dict[int, Transaction]]) -> None:
    """Add the transactions of `data[begin:]` that hold a needle to `found`, each with the events of its lines
    that hold one; a merge into a name searched for adds its sources' names to `needles`, searched for in
    this block up to the merge's transaction and in every block before it.

    Only those lines and the commit lines are decoded: an event that concerns an entry holds its name as a
    JSON string, so no other line can. A source's search ends at the KeyPointAdded or KeyPointsMerged that
    created it: the log gives those a name past every one it issued before, so nothing earlier names it.
    The search for the entry asked about runs to the file's start."""
    lines: dict[int, tuple[Any, int]] = {}  # a line's start -> its record, its transaction's start
    transactions: dict[int, tuple[int, list[int]]] = {}  # a transaction's start -> its end, the lines read
    named: dict[str, set[int]] = {}  # an entry -> the starts of the transactions that name it
    created: list[str] = []
    pending = {needle: (entry, len(data)) for entry, needle in needles.items()}
    while pending:
        arrived: dict[bytes, tuple[str, int]] = {}
        for at, needle in _hits(data, begin, {needle: end for needle, (_entry, end) in pending.items()}):
            entry = pending[needle][0]
            line = data.rfind(b"\n", begin, at) + 1 or begin
            if (known := lines.get(line)) is None:
                start, end = _transaction_bounds(data, begin, line)
                known = lines[line] = _decode_line(path, data, line, low + end), start
                transactions.setdefault(start, (end, []))[1].append(line)
                if isinstance(known[0], _CREATING):
                    created.append(known[0].name)
            record, start = known
            named.setdefault(entry, set()).add(start)
            if isinstance(record, ev.KeyPointsMerged) and record.name == entry:
                for source in record.sources:
                    if source not in followed and (encoded := json_string(source)) is not None:
                        followed.add(source)
                        needles[source] = encoded
                        arrived[encoded] = (source, transactions[start][0])
        pending = arrived
    read = {start: _transaction(path, data, start, end, held, lines, low) for start, (end, held) in transactions.items()}
    for entry, starts in named.items():
        found.setdefault(entry, {}).update((low + start, read[start]) for start in starts)
    first = next(iter(needles))  # the entry asked about: searched to the start
    for name in created:
        if name != first:
            needles.pop(name, None)


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
    return start, logformat.next_commit_end(data, line_start)


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
