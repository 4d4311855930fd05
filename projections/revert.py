"""Revert planning: the compensating events that undo transactions, decided against the log's end.

The plan is made from the timeline (read-only); `playbook.commands.audit.revert` appends it through
the write side, which decides it again against the state under the lock.
"""

from __future__ import annotations

import msgspec

from eventlog.decide import ReplaceContent, decide
from eventlog.domain import KeyPoint, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Event
from eventlog.evolve import apply_transaction
from eventlog.registry import touched_names

from .snapshot import playbook_dict
from .timeline import Timeline, TimelineError, read_transaction


class RevertConflict(PlaybookError):
    """Later transactions touched entries the revert would change; `--force` reverts the rest."""

    def __init__(self, conflicts: dict[str, list[str]]) -> None:
        self.conflicts = conflicts
        detail = "; ".join(f"{name} (changed later by {', '.join(txs)})" for name, txs in sorted(conflicts.items()))
        super().__init__(f"later transactions touched the same entries: {detail}")


class RevertPlan(msgspec.Struct, frozen=True):
    """What reverting `transactions` appends (`events`), and the entries left alone because of later changes."""

    transactions: list[str]
    events: list[Event]
    conflicts: dict[str, list[str]]
    target: PlaybookState
    base: PlaybookState
    """The state the plan was made against (the log's end then): append against it, not a later one."""


def plan_revert(timeline: Timeline, target: str, force: bool = False) -> RevertPlan:
    """The compensating events that undo one transaction, or everything one session did.

    Raises RevertConflict when later transactions touched the same entries, unless
    `force`, which leaves those entries as they are now and reverts the rest.
    """
    refs = timeline.refs
    chosen = timeline.match(target)
    if not chosen:
        raise TimelineError(f"no transaction or session {target!r} in the log", named=target)
    reverted = {refs[i].commit.tx for i in chosen}
    first = chosen[0]
    state = timeline.state_at(refs[first].start)
    touched: set[str] = set()
    later: dict[str, list[str]] = {}
    for ref in refs[first:]:
        transaction = read_transaction(timeline.path, ref)
        names = {n for e in transaction.events if isinstance(e, Event) for n in touched_names(e)}
        if ref.commit.tx in reverted:
            touched |= names
        else:
            apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
            for n in names:
                later.setdefault(n, []).append(ref.commit.tx)
    conflicts = {n: txs for n, txs in later.items() if n in touched}
    if conflicts and not force:
        raise RevertConflict(conflicts)
    current = timeline.state_at(refs[-1].end)  # the end of the log this plan read, not a later one
    without = state  # the log as if the reverted transactions had never been
    for name in conflicts:
        _keep_as_now(without, current, name)
    events = decide(current, ReplaceContent(target=playbook_dict(without), origin="revert", base=current))
    return RevertPlan(transactions=sorted(reverted), events=events, conflicts=conflicts, target=without,
                      base=current)


def _keep_as_now(target: PlaybookState, current: PlaybookState, name: str) -> None:
    section = target.where.pop(name, None)
    if section is not None:
        target.sections[section].pop(name)
    now = current.get(name)
    if now is not None:
        where = current.where[name]
        target.sections[where][name] = KeyPoint(now.name, now.text, now.helpful, now.harmful)
        target.where[name] = where
