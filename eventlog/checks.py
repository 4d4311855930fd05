"""Checking a position or a run of lines against the log without folding it: append points, chained bytes, damage."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from .errors import CorruptLogError
from .events import TransactionCommitted
from .logformat import (CRC_DIGITS, CRC_TAIL, DECODE_ERRORS, HASH_DIGITS, TAIL, Link, Running, check_line, check_run,
                        commit_decoder, digest_at, extend, h_at, hash_after, previous_commit_end, split_hash, start,
                        upgraded)
from .positions import Position
from .store import LogReader


def hash_at(path: Path, position: Position) -> bool:
    """True when the line ending at `position.offset` is the whole commit record of seq `position.seq`,
    its `h` chains from the lines before it, and the file's chain value after it is `position.hash`.

    Reads that transaction back to the commit line before it (in an old log's CRC-32 part, that
    line and the 17 bytes before it), whatever the length of the log: a position passes only
    when a writer could append after it without building on a damaged line."""
    if position.offset == 0:
        return position.hash == ""
    if position.offset < CRC_TAIL:
        return False
    try:
        with open(path, "rb") as handle:
            line, before = _line_ending_at(handle, position.offset)
            hashed = split_hash(line)
            if hashed is None or hash_after(line) != position.hash:
                return False
            if len(hashed[1]) == HASH_DIGITS:
                if not _transaction_chained(handle, position.offset - len(line), line):
                    return False
            elif not _crc_chained(line, before):
                return False
    except OSError:
        return False
    try:
        commit = commit_decoder.decode(line)  # any other record fails to decode as a commit
    except DECODE_ERRORS:
        return False
    return type(commit) is TransactionCommitted and commit.seq == position.seq


def _crc_chained(line: bytes, before: bytes) -> bool:
    """True when CRC-32 line `line` chains from `before`, the last 17 bytes of the line before it."""
    running: Running = 0
    if before:
        previous = split_hash(before)
        if previous is None or len(previous[1]) != CRC_DIGITS:
            return False
        running = extend(before[-CRC_TAIL:], int(previous[1], 16))
    return check_line(line[:-1] if line.endswith(b"\n") else line, running) is not None


def _transaction_chained(handle: IO[bytes], line_start: int, line: bytes) -> bool:
    """True when commit line `line`, beginning at byte `line_start`, and the lines of its transaction before
    it chain from the commit line before them."""
    begin = previous_commit_end(handle, line_start)
    running: Running = 0
    if begin:
        handle.seek(begin - TAIL)
        tail = handle.read(TAIL)
        if digest_at(tail, TAIL) is not None:
            running = start(hash_after(tail))
        else:
            h = h_at(tail, TAIL)
            if h is None:
                return False
            running = extend(tail[-CRC_TAIL:], h)
    handle.seek(begin)
    data = handle.read(line_start - begin)
    whole = data + line
    if not isinstance(running, Link) and digest_at(whole, whole.find(b"\n") + 1) is not None:
        running = upgraded(running)  # the SHA-256 part begins with this transaction, seeded from the CRC-32 value
    if isinstance(running, Link):
        # One SHA-256 over the transaction, as the fold checks it: the commit line's `h` covers every byte
        # before it, the other lines' `h` included, so a line-by-line check would find nothing more.
        with memoryview(whole) as view:
            return check_run(whole, view, len(whole), running) is not None
    lines = data.splitlines()
    lines.append(line.rstrip(b"\n"))
    for number, raw in enumerate(lines):
        after = check_line(raw, running, opens=number == 0)
        if after is None:
            return False
        running = after
    return True


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
        if at < CRC_TAIL and begin > 0:
            size += CRC_TAIL
            continue
        return block[at:], block[max(at - CRC_TAIL, 0):at]


def chained(data: bytes, start_hash: str) -> bool:
    """True when `data`, whole transactions that follow a point whose chain value is `start_hash`, end with a
    commit line and every commit line's `h` covers every byte before it: a flipped byte anywhere in them shows."""
    running = start(start_hash)
    if not isinstance(running, Link) and digest_at(data, data.find(b"\n") + 1) is not None:
        running = upgraded(running)
    if isinstance(running, Link):
        with memoryview(data) as view:
            return check_run(data, view, len(data), running) is not None
    h = h_at(data, len(data))
    return h is not None and extend(memoryview(data)[:-CRC_TAIL], running) == h


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
