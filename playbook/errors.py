"""Errors of the application layer."""

from __future__ import annotations

from eventlog.errors import PlaybookError


class UsageError(PlaybookError):
    """A command-line value that names nothing (an unknown event type, a negative count): `value` is it."""

    def __init__(self, message: str, *, value: str = "") -> None:
        self.value = value
        super().__init__(message)
