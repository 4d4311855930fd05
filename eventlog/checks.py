"""Checking a position or a run of lines against the log without folding it: append points, chained bytes, damage."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from .errors import CorruptLogError
from .events import TransactionCommitted
from .logformat import DECODE_ERRORS, TAIL, check_line, line_hash, running_after, split_hash, start, text
from .positions import Position
from .registry import record_decoder
from .store import LogReader


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
