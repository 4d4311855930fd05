"""The committed transactions of a log as runs of decoded records, for a reader that walks every record.

`LogReader`'s iteration builds a `Transaction` (and its positions' chain values) per
transaction; a reader that only walks the records, in order, needs none of that.
`RunReader.runs` gives the same transactions as plain lists of records, each transaction
its events followed by its commit record, on the same two roads as the store's fold: a
chunk decoded at once by the caller's decoder (which may decode some types as light views)
and checked in bulk up to its last commit line, and the strict line-by-line road from the
last commit whenever the fast one cannot vouch for a chunk (damage raises
`CorruptLogError` there, a type this version does not know becomes an `UnknownRecord`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .events import TransactionCommitted
from .positions import Transaction
from .store import LogReader


class RunReader(LogReader):
    """A `LogReader` that also gives the committed transactions as runs of records."""

    def runs(self, decoder: Any, commit_type: type[Any] = TransactionCommitted) -> Iterator[list[Any]]:
        """Runs of whole committed transactions from `position` on, each transaction its events then its commit.

        `decoder` decodes lines (a `msgspec.json.Decoder` of a union of records and views, its
        commit type `commit_type`); on the strict road records are full. Same checks and the
        same `position` and `torn` after reading as iteration; a run is yielded only once checked.
        """
        for run in self.roads(decoder, commit_type):
            yield [*run.events, run.commit] if isinstance(run, Transaction) else run[0]
