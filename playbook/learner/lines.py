"""Reading a transcript's file: opened without blocking on what is not a regular file, line by line with
no line held whole past a limit, each line a JSON object or a `BrokenLine`."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from eventlog.errors import PlaybookError


class TranscriptError(PlaybookError):
    """The transcript's path cannot be read (missing, unreadable, a directory)."""


class BrokenLine(Exception):
    """A line that is not a readable record."""


# -- lines ---------------------------------------------------------------------


def lines_of(handle: Any, max_line_bytes: int) -> Iterator[tuple[bytes | None, bool]]:
    """(line, terminated) for each line; line is None when longer than max_line_bytes.

    A line too long is skipped in pieces, never held whole in memory.
    """
    while True:
        chunk = handle.readline(max_line_bytes + 1)
        if not chunk:
            return
        if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
            terminated = False
            while True:
                more = handle.readline(1 << 20)
                if not more:
                    break
                if more.endswith(b"\n"):
                    terminated = True
                    break
            yield None, terminated
        else:
            yield chunk, chunk.endswith(b"\n")


def record_of(line: bytes | None) -> dict[str, Any]:
    if line is None:
        raise BrokenLine("line too long")
    line = line.strip()
    if not line:
        raise BrokenLine("empty line")
    try:
        record = msgspec.json.decode(line)
    except RecursionError as exc:
        raise BrokenLine("nested too deeply") from exc
    except msgspec.DecodeError:
        # msgspec rejects lone UTF-16 surrogate escapes ("\ud83d"), which Node writes
        # when it slices a string mid-pair; the standard library takes them.
        try:
            record = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise BrokenLine("not JSON") from exc
    if not isinstance(record, dict):
        raise BrokenLine("not a JSON object")
    return record


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def open_transcript(path: Path) -> Any:
    # Opened with O_NONBLOCK, then checked with fstat: opening a FIFO for reading blocks until a
    # writer appears (forever, for a learner in the background), and a character device
    # (/dev/zero) never ends. Only a regular file is a transcript; the flag changes nothing for one.
    try:
        handle = open(path, "rb", opener=_nonblocking)  # noqa: SIM115 - closed by the caller
    except IsADirectoryError as exc:
        raise TranscriptError(f"cannot read transcript {path}: it is a directory") from exc
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL byte
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise TranscriptError(f"cannot read transcript {path}: {reason}") from exc
    try:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise TranscriptError(f"cannot read transcript {path}: not a regular file")
        os.set_blocking(handle.fileno(), True)
    except OSError as exc:
        handle.close()
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or type(exc).__name__}") from exc
    except BaseException:
        handle.close()
        raise
    return handle
