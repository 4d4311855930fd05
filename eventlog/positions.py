"""Where a reader stands in a log, and what one write or one transaction is."""

from __future__ import annotations

import msgspec

from .domain import PlaybookState
from .events import Event, TransactionCommitted, UnknownRecord


class Position(msgspec.Struct, frozen=True):
    """Where a reader stands: just after the committed transaction ending at `offset`."""

    offset: int = 0
    seq: int = 0
    hash: str = ""
    line: int = 0


class Transaction(msgspec.Struct, frozen=True):
    """One committed transaction: its events (unknown record types included) and its commit record."""

    events: list[Event | UnknownRecord]
    commit: TransactionCommitted
    start: Position
    end: Position


class TornTail(msgspec.Struct, frozen=True):
    """Bytes after the last committed transaction: a write that never finished, or damage.

    A write cut short never completes its commit line, so a tail holding a whole commit
    line that does not read back is damage (`damage`, first found at `damage_line` and
    byte `damage_offset`): readers skip the tail either way, but no writer cuts it or
    appends after it."""

    offset: int
    length: int
    line: int
    damage: str | None = None
    damage_line: int = 0
    damage_offset: int = 0


class Written(msgspec.Struct, frozen=True):
    """One transaction as a store wrote it: its events stamped, its commit record, the position after it."""

    events: list[Event]
    commit: TransactionCommitted
    position: Position


class Committed(msgspec.Struct, frozen=True):
    """What one append wrote, and the state and position after it."""

    events: list[Event]
    commit: TransactionCommitted
    state: PlaybookState
    position: Position
