"""One side of a merge: its transactions, and what each of its names means there."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from .events import Event, KeyPointAdded, KeyPointDeleted, KeyPointImported, KeyPointPruned, KeyPointsMerged
from .events import TransactionCommitted

Ident = tuple[str, Any]
"""Where an entry was created: (transaction id, event index), or ("", name) for an entry of the shared prefix."""


class Tx(NamedTuple):
    """One committed transaction of a side: its events and its commit record."""

    events: Sequence[Event]
    commit: TransactionCommitted


class SideNames:
    """What each name means on one side: the identity of the entry it holds there.

    Followed through that side's own events in its own order. A transaction both sides
    have gives its entries the same identities on both, even when an earlier merge
    renamed one of them, because identities come from event positions, not names.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.idents: dict[str, Ident] = {name: ("", name) for name in names}

    def advance(self, tx: Tx) -> None:
        idents = self.idents
        events: Sequence[Any] = tx.events
        for index, event in enumerate(events):
            kind = type(event)
            if kind is KeyPointAdded or kind is KeyPointImported:
                idents[event.name] = (tx.commit.tx, index)
            elif kind is KeyPointsMerged:
                for source in event.sources:
                    idents.pop(source, None)
                idents[event.name] = (tx.commit.tx, index)
            elif kind is KeyPointDeleted or kind is KeyPointPruned:
                idents.pop(event.name, None)
