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
