"""The daily token budget: whether today's model calls have spent it."""

from __future__ import annotations

import msgspec

from projections.repository import PlaybookRepository

from playbook.wiring.settings import load_settings


class Spent(msgspec.Struct, frozen=True):
    """The day's token budget is spent: what was used, of how much, and what was already deferred today."""

    used: int
    budget: int
    deferred: frozenset[str]

    @property
    def reason(self) -> str:
        return (f"daily token budget reached ({self.used:,} of {self.budget:,} tokens today, UTC); learned "
                "tomorrow, or now with playbook learn --ignore-budget")


def budget_spent(repo: PlaybookRepository) -> Spent | None:
    """Spent when today's model calls used `playbook_daily_token_budget` tokens or more; None while some is left."""
    from projections.usage import spent_on

    budget = int(load_settings(repo.claude_dir.parent).playbook_daily_token_budget)
    if budget <= 0:
        return None
    day = spent_on(repo)
    return Spent(day.tokens, budget, day.deferred) if day.tokens >= budget else None
