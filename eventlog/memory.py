"""A store with the JSONL log's contract, kept in memory: for tests and previews."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import msgspec

from .domain import PlaybookState
from .errors import PositionMismatch
from .events import Cause, Event, TailRepaired, UnknownRecord
from .evolve import apply_transaction
from . import storage
from .positions import Position, TornTail, Transaction, Written


class InMemoryEventStore:
    """The same contract as `JsonlEventStore`, kept in memory: for tests and previews.

    `unfinished` models a write that never finished (records with no commit): readers do
    not see it, and the next writer cuts it and records that it did.
    """

    def __init__(self) -> None:
        self.transactions: list[Transaction] = []
        self.unfinished: list[Event] = []
        self.kept: list[list[Event]] = []

    def exists(self) -> bool:
        return bool(self.transactions or self.unfinished)

    def size(self) -> int:
        return self.transactions[-1].end.offset if self.transactions else 0

    def read(self, start: Position = Position()) -> Iterator[Transaction]:
        return iter([t for t in self.transactions if t.start.seq >= start.seq])

    @contextmanager
    def locked(self) -> Iterator[None]:
        yield


    def mark(self) -> tuple[int, int, int] | None:
        return None

    def holds(self, position: Position) -> bool:
        return position == Position() or any(t.end == position for t in self.transactions)

    def fold(self, state: PlaybookState, start: Position = Position(), until: int | None = None
             ) -> tuple[PlaybookState, Position, TornTail | None]:
        position = start
        for transaction in self.read(start):
            if until is not None and transaction.end.offset > until:
                return state, position, None
            apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
            position = transaction.end
        torn = None
        if self.unfinished:
            torn = TornTail(offset=position.offset, length=len(self.unfinished), line=position.line + 1)
        return state, position, torn

    def cut(self, torn: TornTail) -> TailRepaired:
        self.kept.append(self.unfinished)
        self.unfinished = []
        return TailRepaired(offset=torn.offset, bytes_cut=torn.length, kept_at=f"kept[{len(self.kept) - 1}]")

    def write(self, position: Position, events: list[Event], cause: Cause) -> Written:
        if position.offset != self.size() or self.unfinished:
            raise PositionMismatch("memory", position.offset, self.size())
        (tx, at), seq = storage.new_transaction(), position.seq
        stamped = []
        for event in events:
            seq += 1
            stamped.append(msgspec.structs.replace(event, seq=seq, tx=tx, at=at))
        seq += 1
        commit = storage.commit_record(seq, tx, at, len(stamped), cause)
        end = Position(offset=seq, seq=seq, hash="", line=seq)
        self.transactions.append(Transaction(events=list[Event | UnknownRecord](stamped), commit=commit,
                                             start=position, end=end))
        return Written(events=stamped, commit=commit, position=end)
