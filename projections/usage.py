"""What learning used: the `ModelCallRecorded` records of the log, summed per cycle, per UTC day and per model.

A learning cycle is one transaction, so its calls (every attempt, failed ones included) sit in
it: the per-cycle rows are per transaction. Costs are `projections.prices`' (the backend's own
figure when it recorded one); a call of a model without a known price adds its tokens and
counts in `unpriced`, never a guessed cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from eventlog.events import LearningDeferred, ModelCallRecorded, TransactionCommitted

from .prices import PRICES_AS_OF, cost_of, total_tokens
from .repository import PlaybookRepository
from .timeline import Timeline


class Totals(msgspec.Struct):
    """Sums over some model calls."""

    calls: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    """Calls of a model the price table does not know: their tokens are counted, their cost is not."""

    def add(self, call: ModelCallRecorded) -> None:
        self.calls += 1
        self.failed += int(call.outcome != "ok")
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        self.cache_creation_input_tokens += call.cache_creation_input_tokens
        self.cache_read_input_tokens += call.cache_read_input_tokens
        self.tokens += total_tokens(call)
        cost = cost_of(call)
        if cost is None:
            self.unpriced += 1
        else:
            self.cost_usd += cost


class Cycle(msgspec.Struct):
    """The model calls of one transaction (one learning cycle)."""

    tx: str
    at: str
    source: str
    session: str | None
    models: list[str]
    totals: Totals


class UsageReport(msgspec.Struct):
    prices_as_of: str
    total: Totals
    cycles: list[Cycle]
    per_day: dict[str, Totals]
    per_model: dict[str, Totals]


def usage_report(transactions: Iterable[tuple[Sequence[Any], TransactionCommitted]]) -> UsageReport:
    """Usage per cycle (oldest first), per UTC day and per model, over `transactions` (events and commit)."""
    total = Totals()
    cycles: list[Cycle] = []
    per_day: dict[str, Totals] = {}
    per_model: dict[str, Totals] = {}
    for events, commit in transactions:
        calls = [event for event in events if isinstance(event, ModelCallRecorded)]
        if not calls:
            continue
        cycle = Cycle(tx=commit.tx, at=commit.at, source=commit.source, session=commit.session,
                      models=list(dict.fromkeys(call.model for call in calls)), totals=Totals())
        day = per_day.setdefault(commit.at[:10], Totals())
        for call in calls:
            for totals in (total, cycle.totals, day, per_model.setdefault(call.model, Totals())):
                totals.add(call)
        cycles.append(cycle)
    return UsageReport(prices_as_of=PRICES_AS_OF, total=total, cycles=cycles, per_day=dict(sorted(per_day.items())),
                       per_model=dict(sorted(per_model.items())))


def today() -> str:
    """The current UTC day, as the log's times begin with it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


class Day(msgspec.Struct, frozen=True):
    """What one UTC day's transactions say about learning's spending."""

    day: str
    tokens: int
    """Every token the model calls recorded that day counted."""
    deferred: frozenset[str]
    """The learning requests deferred that day (so a request is deferred once a day, not once per learner)."""


def spent_on(repo: PlaybookRepository | Path, day: str | None = None) -> Day:
    """The tokens spent and the requests deferred on UTC `day` (default today).

    Reads the log backwards from its end and stops at the first transaction of an earlier day,
    so the cost is that of one day's transactions, whatever the length of the log."""
    repo = repo if isinstance(repo, PlaybookRepository) else PlaybookRepository(repo)
    day = day or today()
    used = 0
    deferred: set[str] = set()
    for transaction in Timeline(repo).newest(since=day):
        if transaction.commit.at[:10] != day:
            continue
        for event in transaction.events:
            if isinstance(event, ModelCallRecorded):
                used += total_tokens(event)
            elif isinstance(event, LearningDeferred):
                deferred.add(event.request)
    return Day(day=day, tokens=used, deferred=frozenset(deferred))
