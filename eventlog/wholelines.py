"""Reading a binary file as runs of whole lines, into one reused buffer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

CHUNK_SIZE = 1 << 20


class WholeLines:
    """The rest of a binary file as (buffer, size) pairs: `buffer[:size]` is whole lines.

    One buffer is reused and refilled with `readinto`, so nothing is copied but the
    unfinished last line; a pair is valid until the next one is asked for, and a
    caller's memoryviews of it must be released by then. After iteration, `leftover`
    is the length of the bytes after the last newline.
    """

    def __init__(self, handle: Any, chunk_size: int | None = None) -> None:  # a binary file with readinto
        self.handle = handle
        self.chunk_size = chunk_size or CHUNK_SIZE
        self.leftover = 0

    def __iter__(self) -> Iterator[tuple[bytearray, int]]:
        buffer = bytearray(self.chunk_size)
        keep = 0
        while True:
            if keep == len(buffer):  # one line longer than the buffer
                buffer.extend(bytes(len(buffer)))
            with memoryview(buffer) as view:
                read = self.handle.readinto(view[keep:])
            if not read:
                break
            filled = keep + read
            cut = buffer.rfind(b"\n", 0, filled) + 1
            if cut:
                yield buffer, cut
                buffer[: filled - cut] = buffer[cut:filled]
            keep = filled - cut
        self.leftover = keep
