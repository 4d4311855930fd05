"""Merging two logs that share a prefix: each side's transactions replayed onto one merged state.

Pure: no I/O. Both sides' transactions after the shared prefix are walked in one order
(time, then transaction id, each side's own order kept) and each is replayed against the
merged state through `decide` and `apply`, so the playbook's rules stay where they are.
A replayed transaction keeps its id, its time and one event for each of its events.

What a merge adds to those rules (each outcome is an event in the log):

- ratings and counter changes from both sides all count: they are applied as increments
  to the merged counters;
- a name created on both sides keeps its name on the earlier side; the later one gets
  the next free name of its section (`KeyPointAdded.proposed_name` keeps the one it asked
  for), and every later event of that side follows it; the same text added on both sides
  is one entry, and the later side's ratings go to it;
- the same key point changed on both sides (recorded as `MergeConflictResolved`, which
  keeps the losing text):
  update/update: the later update stands (time, then transaction id);
  update/delete: the delete stands, whichever came first;
  update/merge, delete/merge: the merge stands, the merged entry carries the content
  (a source deleted on the other side still adds its counters);
  merge/merge: the later merge takes in the earlier one's entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from .domain import PlaybookState
from .events import Event, MergeConflictResolved, TransactionCommitted
from .merge_replay import DELETE_WINS, LATER_WINS, MERGE_WINS, MergedState
from .merge_sides import Ident, SideNames, Tx

__all__ = [  # a side's types and the rules' texts are used through this module
    "DELETE_WINS", "Ident", "LATER_WINS", "MERGE_WINS", "Merged", "MergedState", "Replayed", "SideNames", "Tx",
    "merge_transactions",
]


class Replayed(NamedTuple):
    """A transaction as the merged log holds it, and which side(s) brought it: ours | theirs | both."""

    events: list[Event]
    commit: TransactionCommitted
    side: str


class Merged(msgspec.Struct):
    """The outcome of `merge_transactions`: the replayed transactions in order, and the conflicts resolved."""

    transactions: list[Replayed]
    conflicts: list[MergeConflictResolved]
    state: PlaybookState


def _order(tx: Tx) -> tuple[str, str]:
    return tx.commit.at, tx.commit.tx


def _version(tx: Tx) -> bytes:
    """A transaction's content without its place in a log: the same on every side that holds this version."""
    return msgspec.json.encode([msgspec.structs.replace(e, seq=0) for e in tx.events])


def merge_transactions(state: PlaybookState, ours: Sequence[Tx], theirs: Sequence[Tx],
                       leave_out: frozenset[str] = frozenset()) -> Merged:
    """Replay both sides' transactions after their shared prefix, whose state is `state` (taken over).

    Order: time, then transaction id, each side's own order kept; a transaction both sides
    have is replayed once. Transactions of `theirs` named in `leave_out` are not replayed
    (they only keep that side's names in step). The same result whichever side is `ours`.
    """
    walk = _Walk(state, ours, theirs, leave_out)
    walk.run()
    return Merged(transactions=walk.result, conflicts=walk.merged.conflicts, state=walk.merged.state)


class _Walk:
    """Both sides walked in merge order, each transaction replayed once; `result` holds them as replayed."""

    def __init__(self, state: PlaybookState, ours: Sequence[Tx], theirs: Sequence[Tx],
                 leave_out: frozenset[str]) -> None:
        self.ours, self.theirs, self.leave_out = ours, theirs, leave_out
        self.ours_ids = {tx.commit.tx for tx in ours}
        self.theirs_ids = {tx.commit.tx for tx in theirs}
        self.ours_names, self.theirs_names = SideNames(state.where), SideNames(state.where)
        self.merged = MergedState(state)
        self.done: set[str] = set()
        self.result: list[Replayed] = []

    def run(self) -> None:
        ours, theirs = self.ours, self.theirs
        i = j = 0
        while i < len(ours) or j < len(theirs):
            a = ours[i] if i < len(ours) else None
            b = theirs[j] if j < len(theirs) else None
            if a is not None and a.commit.tx in self.done:
                self.ours_names.advance(a)
                i += 1
            elif b is not None and b.commit.tx in self.done:
                self.theirs_names.advance(b)
                j += 1
            elif a is not None and b is not None and a.commit.tx == b.commit.tx:
                self._both(a, b)
                i += 1
                j += 1
            elif b is None or (a is not None and _order(a) < _order(b)):
                assert a is not None
                self._ours(a)
                i += 1
            else:
                self._theirs(b)
                j += 1

    def _replay(self, tx: Tx, side: str, names: SideNames) -> None:
        self.result.append(Replayed(self.merged.replay(tx, side, names), tx.commit, side))
        self.done.add(tx.commit.tx)

    def _both(self, a: Tx, b: Tx) -> None:
        """The same transaction on both sides: replayed once, in the version that sorts first."""
        pick, names = (a, self.ours_names) if _version(a) <= _version(b) else (b, self.theirs_names)
        self._replay(pick, "both", names)
        self.ours_names.advance(a)
        self.theirs_names.advance(b)

    def _ours(self, a: Tx) -> None:
        self._replay(a, "both" if a.commit.tx in self.theirs_ids else "ours", self.ours_names)
        self.ours_names.advance(a)

    def _theirs(self, b: Tx) -> None:
        if b.commit.tx not in self.leave_out:
            self._replay(b, "both" if b.commit.tx in self.ours_ids else "theirs", self.theirs_names)
        self.theirs_names.advance(b)
