"""The log's line format: how a record becomes a line, the chain that links the lines, commit lines.

A line is the record as msgspec encodes it with `,"h":"xxxxxxxx"` spliced in last:
`h` is the chain's value for the whole file up to that field (see `line_hash`), so a
line is checked from the value before it, and a run of lines with one call over their
bytes. A transaction's last line is its `TransactionCommitted`, which always begins
`{"type":"TransactionCommitted"`: commit lines are found by byte search, because a
newline or a quote inside a JSON string is escaped.

The chain is CRC-32, kept behind `extend`, `line_hash`, `running_after`, `start` and
`text`: everything that knows the chain's arithmetic is in this module.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import msgspec

from .events import RecordType, TransactionCommitted, encodable_record, encoder
from .positions import Position
from .registry import RECORD_TAGS, record_decoder, unknown_decoder

HASH_KEY = b',"h":"'
HASH_DIGITS = 8
SUFFIX = len(HASH_KEY) + HASH_DIGITS + 2
"""`,"h":"xxxxxxxx"}`: what follows a line's hashed prefix."""
TAIL = SUFFIX + 1
"""The suffix with its newline."""
COMMIT = b'{"type":"TransactionCommitted"'
"""How every commit line begins."""
NEWLINE_COMMIT = b"\n" + COMMIT
SEQ_AT = len(COMMIT) + len(b',"seq":')
"""Where a commit line's seq digits begin."""
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)
_SEARCH_CHUNK = 4 << 20
_WINDOW = 64 << 10


# --- the chain --------------------------------------------------------------------------------------------

extend = zlib.crc32
"""`extend(data, running)`: the chain's running value after `data`."""


def start(text_value: str) -> int:
    """The running value a position's `hash` text stands for ("" is the start of the file)."""
    return int(text_value, 16) if text_value else 0


def text(running: int) -> str:
    """A running value as a position's `hash` text."""
    return "%08x" % running


def line_hash(running: int, prefix: bytes | bytearray | memoryview) -> int:
    """The `h` of a line: the CRC-32 of the whole file up to this line's `,"h":` field.

    So every line is checked on its own (from the running value before it), and a whole
    transaction with one `crc32` over its bytes. It finds cuts, damage, edits and where
    they are; like any unkeyed checksum it does not stop a deliberate rewrite.
    """
    return zlib.crc32(prefix, running)


def running_after(line: bytes, h: int) -> int:
    """The file's running value after `line` (with its newline), given the line's own `h`."""
    return zlib.crc32(line[-TAIL:], h)


def h_at(buffer: Any, end: int) -> int | None:
    """The `h` of the line ending (after its newline) at `end` of `buffer`, or None when it has none."""
    if buffer[end - TAIL : end - 11] != HASH_KEY:
        return None
    try:
        return int(buffer[end - 11 : end - 3], 16)
    except ValueError:
        return None


def check_line(raw: bytes, running: int) -> int | None:
    """The running value after line `raw` (without its newline) when its `h` is right, else None."""
    hashed = split_hash(raw)
    if hashed is None or hashed[1] != zlib.crc32(hashed[0], running):
        return None
    return zlib.crc32(raw[-SUFFIX:] + b"\n", hashed[1])


def hash_after(line: bytes) -> str:
    """The position hash just after `line`, read from its own `h` ("" when it has none)."""
    hashed = split_hash(line)
    return text(running_after(line if line.endswith(b"\n") else line + b"\n", hashed[1])) if hashed else ""


# --- lines ------------------------------------------------------------------------------------------------


def encode_line(record: msgspec.Struct, running: int) -> tuple[bytes, int]:
    """The line for `record` after a file whose running value is `running`, and the running value after it."""
    prefix = encoder.encode(record)[:-1]
    h = zlib.crc32(prefix, running)
    line = prefix + HASH_KEY + b"%08x" % h + b'"}\n'
    return line, zlib.crc32(line[-TAIL:], h)


def encoded(record: RecordType, running: int) -> tuple[RecordType, bytes, int]:
    """(record as written, its line, running value after it). What JSON cannot hold (a lone surrogate, a
    number of thousands of digits inside a recorded request) is repaired, not fatal."""
    try:
        return (record, *encode_line(record, running))
    except ValueError:  # UnicodeEncodeError, or an integer too long to write
        record = encodable_record(record)
        return (record, *encode_line(record, running))


def restamp(transactions: Iterable[tuple[Sequence[Any], TransactionCommitted]], after: Position) -> tuple[bytes, Position]:
    """The lines of whole transactions written again after position `after` of a log (a merge).

    Each transaction keeps its id, its time and its records' content; only the sequence
    numbers and the chain are new, made by the same encoding every append uses. A record
    without its transaction's id or time is given them. Returns the bytes and the position
    after them.
    """
    seq, line_count = after.seq, after.line
    running = start(after.hash)
    lines: list[bytes] = []
    replace = msgspec.structs.replace
    for events, commit in transactions:
        tx, at = commit.tx, commit.at
        for event in events:
            seq += 1
            _record, line, running = encoded(replace(event, seq=seq, tx=tx, at=event.at or at), running)
            lines.append(line)
        seq += 1
        _record, line, running = encoded(replace(commit, seq=seq, events=len(events)), running)
        lines.append(line)
    data = b"".join(lines)
    return data, Position(after.offset + len(data), seq, text(running), line_count + len(lines))


def split_hash(line: bytes) -> tuple[bytes, int] | None:
    """(prefix, h) of a line as `encode_line` wrote it (`h` is last and fixed-width), or None."""
    line = line if line.endswith(b"\n") else line + b"\n"
    if len(line) < TAIL or line[-TAIL:-11] != HASH_KEY or line[-3:] != b'"}\n':
        return None
    try:
        return line[:-TAIL], int(line[-11:-3], 16)
    except ValueError:
        return None


def decode_line(line: bytes) -> Any:
    """Decode one line; a well-formed record of a type this version does not know is an UnknownRecord."""
    try:
        return record_decoder.decode(line)
    except msgspec.ValidationError:
        unknown = unknown_decoder.decode(line)  # raises when it is not even a record
        if unknown.type in RECORD_TAGS:
            raise
        return unknown


def decode_records(data: bytes) -> list[Any]:
    """The records of whole lines; a type this version does not know (a newer one's) is an UnknownRecord."""
    try:
        return record_decoder.decode_lines(data)
    except DECODE_ERRORS:
        return [decode_line(line) for line in data.splitlines()]


commit_decoder = msgspec.json.Decoder(TransactionCommitted)


# --- finding commit lines ---------------------------------------------------------------------------------


def is_commit_start(buffer: Any, at: int) -> bool:
    """True when a commit line begins at `at` of `buffer` (the search found its bytes at a line's start)."""
    return at == 0 or buffer[at - 1] == 10


def find_all(path: Path, needle: bytes, begin: int = 0) -> Iterator[int]:
    """Offsets of `needle` in the file from `begin`, reading it in chunks (no mmap: memory stays flat)."""
    try:
        handle = open(path, "rb")
    except (FileNotFoundError, NotADirectoryError):
        return
    with handle:
        handle.seek(begin)
        base, carry = begin, b""
        while True:
            data = handle.read(_SEARCH_CHUNK)
            if not data:
                return
            buffer = carry + data
            at = buffer.find(needle)
            while at >= 0:
                yield base - len(carry) + at
                at = buffer.find(needle, at + 1)
            keep = len(needle) - 1
            carry = buffer[-keep:] if keep else b""
            base += len(data)


def line_at(handle: IO[bytes], offset: int) -> bytes:
    """The whole line starting at `offset` (with its newline), or b"" when it is unfinished."""
    handle.seek(offset)
    line = handle.readline(1 << 24)
    return line if line.endswith(b"\n") else b""


def commit_starts(path: Path, handle: IO[bytes], begin: int) -> Iterator[int]:
    """Offsets of the commit lines that start at or after `begin`, in order."""
    if begin == 0 and line_at(handle, 0).startswith(COMMIT):
        yield 0
    for at in find_all(path, NEWLINE_COMMIT, max(begin - 1, 0)):
        yield at + 1


def previous_commit_end(handle: IO[bytes], offset: int) -> int:
    """The end of the last commit line that ends at or before `offset` (0 when none)."""
    line_start = _line_start(handle, offset)
    position = line_start
    while position > 0:
        begin = max(position - _WINDOW, 0)
        handle.seek(begin)
        block = handle.read(position - begin + len(NEWLINE_COMMIT))
        at = block.rfind(NEWLINE_COMMIT, 0, position - begin + 1)
        if at >= 0:
            handle.seek(begin + at + 1)
            return begin + at + 1 + len(handle.readline())
        if begin == 0:
            return 0
        position = begin + len(NEWLINE_COMMIT)
    return 0


def _line_start(handle: IO[bytes], offset: int) -> int:
    """The start of the line holding `offset`."""
    line_start = block_end = offset
    while line_start > 0:
        begin = max(line_start - _WINDOW, 0)
        handle.seek(begin)
        block = handle.read(block_end - begin)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return begin + cut + 1
        line_start = block_end = begin
    return line_start


def next_commit_end(data: bytes, after: int) -> int:
    """The end (after its newline) of the first commit line of `data` that starts at or after `after`, or -1."""
    at = data.find(COMMIT, after)
    while at > 0 and data[at - 1] != 10:
        at = data.find(COMMIT, at + 1)
    if at < 0:
        return -1
    end = data.find(b"\n", at)
    return end + 1 if end >= 0 else -1


def commits_from_end(data: Any) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each whole commit line of `data` (a mapped file), the last one first."""
    at = data.rfind(NEWLINE_COMMIT)
    while True:
        begin = at + 1 if at >= 0 else 0
        if at < 0 and data[: len(COMMIT)] != COMMIT:
            begin = -1
        if begin >= 0:
            end = data.find(b"\n", begin)
            if end >= 0:
                yield begin, data[begin : end + 1]
        if at < 0:
            return
        at = data.rfind(NEWLINE_COMMIT, 0, at)
