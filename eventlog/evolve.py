"""evolve(state, event) -> state: the only place where events change the playbook.

`apply` changes a state the caller owns, in place, and is what every fold uses
(rebuild, time travel, revert previews, decide's scratch state), because copying
the state per event would make long logs slow. `evolve` is the pure form of the
same rules, and `fold` is `reduce(evolve, events, empty)` done with one copy.
`apply_records` is the same rules over a run of log records, commits included:
the loop the store's fold runs, on records decoded as the light `FOLD_VIEWS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Union

from .domain import PlaybookState, Usage
from .events import Event, KeyPointEvaluated, TransactionCommitted, record_view
from .registry import COMMIT_READS, REGISTRY, Handler

_APPLY: dict[type, Handler] = {entry.cls: entry.apply for entry in REGISTRY}


def apply(state: PlaybookState, event: Event) -> None:
    """Apply one event to a state owned by the caller. Total: an unknown event changes only `seq`."""
    if event.seq:
        state.seq = event.seq
    handler = _APPLY.get(type(event))
    if handler is not None and handler(state, event) and event.at:
        state.last_updated = event.at


# What each handler reads of its event (`EventType.reads`): the fold decodes lines as views
# that hold only these fields (see `record_view`); the fold tests, which fold every event
# type both ways, fail when a handler reads a field its entry does not list.
_READS: dict[type, tuple[str, ...]] = {
    **{entry.cls: entry.reads for entry in REGISTRY}, TransactionCommitted: COMMIT_READS,
}
_VIEW_OF: dict[type, type] = {kind: record_view(kind, fields) for kind, fields in _READS.items()}
FOLD_VIEWS: Any = Union[tuple(_VIEW_OF.values())]
"""Every record type as the fold reads it: decode with `msgspec.json.Decoder(FOLD_VIEWS)`."""
_SEQ_VIEW_OF: dict[type, type] = {
    kind: _VIEW_OF[kind] if "seq" in fields else record_view(kind, (*fields, "seq")) for kind, fields in _READS.items()
}
"""The same views with every line's `seq`, for a reader that checks each one (see `fold_views_with`)."""

_HANDLERS: dict[type, Handler] = {
    **_APPLY, **{view_of[kind]: handler for view_of in (_VIEW_OF, _SEQ_VIEW_OF) for kind, handler in _APPLY.items()}
}
_EVALUATED = (KeyPointEvaluated, _VIEW_OF[KeyPointEvaluated], _SEQ_VIEW_OF[KeyPointEvaluated])
CommitView = _VIEW_OF[TransactionCommitted]
"""The fold's view of a `TransactionCommitted` line."""


def fold_views_with(whole: tuple[type, ...]) -> Any:
    """`FOLD_VIEWS` with every line's `seq`, and the record types in `whole` (commits among them, or not)
    decoded as the records themselves: for a reader that checks every seq or looks at what it folds
    (`apply_records` takes these views too)."""
    return Union[tuple(kind if kind in whole else _SEQ_VIEW_OF[kind] for kind in _READS)]


def apply_records(state: PlaybookState, records: list[Any]) -> None:
    """Apply whole committed transactions, given as their records in log order, in place.

    Each transaction is its events followed by its commit record; events and commits may
    be the records themselves or their `FOLD_VIEWS`. Same result as `apply_transaction`
    on each transaction; records after the last commit must not be passed.
    """
    get = _HANDLERS.get
    where, sections, usage = state.where, state.sections, state.usage
    evaluated, evaluated_view, evaluated_seq = _EVALUATED
    changed = False
    for record in records:
        kind = type(record)
        if kind is evaluated_view or kind is evaluated_seq or kind is evaluated:  # about half of any log: `counters` and `used`, inlined
            name = record.name
            section = where.get(name)
            if section is not None:
                kp = sections[section][name]
                helpful, harmful = record.helpful, record.harmful
                if kp.helpful != helpful or kp.harmful != harmful:
                    found = usage.get(name)
                    if found is None:
                        found = usage[name] = Usage()
                    found.last_used = state.sessions + 1
                    found.stale = False
                    kp.helpful = helpful
                    kp.harmful = harmful
            changed = True
        elif kind is CommitView or kind is TransactionCommitted:
            if changed and record.at:
                state.last_updated = record.at
            state.seq = record.seq
            changed = False
        else:
            handler = get(kind)
            if handler is not None and handler(state, record):
                changed = True


def apply_transaction(state: PlaybookState, events: list[Any], seq: int, at: str) -> None:
    """Apply one committed transaction's events (all stamped `at`) in place; same result as `apply` on each."""
    apply_records(state, [*events, CommitView(seq=seq, at=at)])


def evolve(state: PlaybookState, event: Event) -> PlaybookState:
    """The state after `event`; `state` itself is left as it was."""
    new = state.copy()
    apply(new, event)
    return new


def fold(events: Iterable[Event], state: PlaybookState | None = None) -> PlaybookState:
    """Same result as `functools.reduce(evolve, events, state or empty)`, with one copy."""
    current = PlaybookState() if state is None else state.copy()
    for event in events:
        apply(current, event)
    return current
