"""Finding commit lines in a log's bytes: where transactions end, without decoding a line.

A transaction's last line is its `TransactionCommitted`, which always begins
`{"type":"TransactionCommitted"`; a newline or a quote inside a JSON string is escaped, so a
byte search finds every commit line and nothing else. Files are searched in chunks or
windows, so memory stays flat whatever the log's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

COMMIT = b'{"type":"TransactionCommitted"'
"""How every commit line begins."""
NEWLINE_COMMIT = b"\n" + COMMIT
_SEARCH_CHUNK = 4 << 20
_WINDOW = 64 << 10


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
