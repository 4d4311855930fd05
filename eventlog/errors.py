"""Errors of the log, each carrying the evidence a user needs to act on it."""

from __future__ import annotations

from pathlib import Path


class PlaybookError(Exception):
    """Base of every error this project raises on purpose."""


class CorruptLogError(PlaybookError):
    """A line before the log's tail is damaged: reading stops there, and nothing is appended until it is repaired."""

    def __init__(self, path: Path | str, line: int, offset: int, reason: str) -> None:
        self.path, self.line, self.offset, self.reason = Path(path), line, offset, reason
        super().__init__(f"{path}:{line}: damaged log line at byte {offset}: {reason}")


class StorageError(PlaybookError):
    """The playbook's files could not be written (permissions, disk full, ...)."""


class PositionMismatch(StorageError):
    """A write expected the log to end at `expected` and found it ending at `found`: a writer not holding
    the lock, or a caller's stale position. Nothing was written."""

    def __init__(self, log: Path | str, expected: int, found: int) -> None:
        self.log, self.expected, self.found = log, expected, found
        super().__init__(f"{log}: expected the log to end at {expected}, it ends at {found}; nothing was written")
