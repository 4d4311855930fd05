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
    """The playbook's files could not be written (permissions, disk full, ...): what was being done
    (`action`), to which file (`path`), and what the system said (`cause`)."""

    def __init__(self, message: str, *, action: str = "", path: Path | str | None = None, cause: str = "") -> None:
        self.action, self.path, self.cause = action, path, cause
        super().__init__(message)

    @classmethod
    def failed(cls, action: str, path: Path | str, exc: OSError) -> StorageError:
        """`cannot {action} {path}: {why}` for an OSError, with each part kept as a field."""
        cause = str(exc.strerror or exc)
        return cls(f"cannot {action} {path}: {cause}", action=action, path=path, cause=cause)


class PositionMismatch(StorageError):
    """A write expected the log to end at `expected` and found it ending at `found`: a writer not holding
    the lock, or a caller's stale position. Nothing was written."""

    def __init__(self, log: Path | str, expected: int, found: int) -> None:
        self.expected, self.found = expected, found
        super().__init__(f"{log}: expected the log to end at {expected}, it ends at {found}; nothing was written",
                         action="append to", path=log, cause="the log moved")
