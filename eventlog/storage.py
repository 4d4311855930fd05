"""What a store of the log is, below every store: the `EventStore` protocol the write cycle runs over, the
`Decider` it runs, and a new transaction's id, time and commit record.

The JSONL log (`eventlog.jsonl`) and the in-memory store (`eventlog.memory`) implement it; the write
cycle (`eventlog.unit_of_work`) and the contract suite (`tests/test_store.py`) know a store only through it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Protocol

from .domain import PlaybookState
from .events import Cause, Event, TailRepaired, TransactionCommitted
from .positions import Position, TornTail, Transaction, Written


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def new_transaction() -> tuple[str, str]:
    """(id, time) for a transaction about to be written: 16 hex digits, and UTC now."""
    return uuid.uuid4().hex[:16], utc_now()


def commit_record(seq: int, tx: str, at: str, events: int, cause: Cause) -> TransactionCommitted:
    return TransactionCommitted(seq=seq, tx=tx, at=at, events=events, source=cause.source, session=cause.session,
                                model=cause.model, analysis=cause.analysis, reasoning=cause.reasoning, note=cause.note)


Decider = Callable[[PlaybookState], list[Event]]


class EventStore(Protocol):
    """What the write side needs of a log. `write` and `cut` only while `locked()` is held."""

    def exists(self) -> bool: ...

    def size(self) -> int:
        """Where the log ends (the position after its last byte)."""
        ...

    def locked(self) -> AbstractContextManager[None]: ...

    def read(self, start: Position = Position()) -> Iterable[Transaction]: ...

    def holds(self, position: Position) -> bool:
        """True when `position` is the end of a committed transaction of this log (or its start)."""
        ...

    def fold(self, state: PlaybookState, start: Position = Position(), until: int | None = None
             ) -> tuple[PlaybookState, Position, TornTail | None]:
        """Apply the committed transactions after `start` (ending by `until`) to `state`, in place."""
        ...

    def cut(self, torn: TornTail) -> TailRepaired:
        """Remove an unfinished write from the end of the log, keeping what it held."""
        ...

    def write(self, position: Position, events: list[Event], cause: Cause) -> Written:
        """Append `events` and their commit as one transaction, all or nothing, at `position`, which must be
        the log's end (`PositionMismatch` otherwise). Durable when it returns."""
        ...

    def mark(self) -> tuple[int, int, int] | None:
        """What any write to the log by anyone changes (a file's inode, size and modification time); None
        for a store no other process can write, whose writer then never trusts what it kept."""
        ...
