"""evolve(state, event) -> state: the only place where events change the playbook.

`apply` changes a state the caller owns, in place, and is what every fold uses
(rebuild, time travel, revert previews, decide's scratch state), because copying
the state per event would make long logs slow. `evolve` is the pure form of the
same rules, and `fold` is `reduce(evolve, events, empty)` done with one copy.
`apply_records` is the same rules over a run of log records, commits included:
the loop the store's fold runs, on records decoded as the light `fold_views()`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any, NamedTuple, Union

from . import handlers as h
from .domain import KeyPoint, PlaybookState, Usage
from .events import Event, TransactionCommitted, record_view
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


class _Views(NamedTuple):
    """The fold's view types and what it does with each: built on first use, as building the views
    (a struct per record type) is a good part of the import of the log's machinery, which a command
    that never folds (a hook reading a current playbook.json) does not need."""

    view_of: dict[type, type]
    handlers: dict[type, Handler]
    """By record type and view type; `_seq_views` adds its views."""
    counted: set[type]
    added: set[type]
    removed: set[type]
    commits: set[type]
    """The types, records and views, that `apply_records` applies inline as `handlers.counters` (ratings:
    about half of any log), `handlers.added` and `handlers.removed`, and the commits; `_seq_views` adds its views."""
    commit_view: type
    fold_views: Any


@cache
def _views() -> _Views:
    view_of = {kind: record_view(kind, fields) for kind, fields in _READS.items()}
    handlers = {**_APPLY, **{view_of[kind]: handler for kind, handler in _APPLY.items()}}

    def served(handler: Handler) -> set[type]:
        return {each for kind, its in _APPLY.items() if its is handler for each in (kind, view_of[kind])}

    return _Views(view_of, handlers, served(h.counters), served(h.added), served(h.removed),
                  {TransactionCommitted, view_of[TransactionCommitted]}, view_of[TransactionCommitted],
                  Union[tuple(view_of.values())])


@cache
def _seq_views() -> dict[type, type]:
    """The views with every line's `seq`, for a reader that checks each one (see `fold_views_with`): built
    only when such a reader first asks, and registered with the fold before any line is decoded as one."""
    views = _views()
    seq_view_of = {kind: views.view_of[kind] if "seq" in fields else record_view(kind, (*fields, "seq"))
                   for kind, fields in _READS.items()}
    views.handlers.update({seq_view_of[kind]: handler for kind, handler in _APPLY.items()})
    for kinds in (views.counted, views.added, views.removed, views.commits):
        kinds.update([seq_view_of[kind] for kind in _READS if kind in kinds])
    return seq_view_of


def fold_views() -> Any:
    """Every record type as the fold reads it, to decode with `msgspec.json.Decoder(fold_views())`; built on
    first use and kept."""
    return _views().fold_views


def commit_view() -> Any:
    """The fold's view of a `TransactionCommitted` line; built on first use and kept."""
    return _views().commit_view


def fold_views_with(whole: tuple[type, ...]) -> Any:
    """`fold_views()` with every line's `seq`, and the record types in `whole` (commits among them, or not)
    decoded as the records themselves: for a reader that checks every seq or looks at what it folds
    (`apply_records` takes these views too)."""
    seq_view_of = _seq_views()
    return Union[tuple(kind if kind in whole else seq_view_of[kind] for kind in _READS)]


def apply_records(state: PlaybookState, records: list[Any]) -> None:
    """Apply whole committed transactions, given as their records in log order, in place.

    Each transaction is its events followed by its commit record; events and commits may
    be the records themselves or their `fold_views()`. Same result as `apply_transaction`
    on each transaction; records after the last commit must not be passed.
    """
    views = _views()
    get, counted, added, removed, commits = views.handlers.get, views.counted, views.added, views.removed, views.commits
    note_name = h.note_name
    where, sections, usage = state.where, state.sections, state.usage
    changed = False
    now = state.sessions + 1  # the session under way: only a handler called below moves it
    # The commonest lines' handlers run inline, as `eventlog.handlers` has them: the fold runs this per line.
    for record in records:
        kind = type(record)
        if kind in counted:  # `handlers.counters`
            name = record.name
            section = where.get(name)
            if section is not None:
                kp = sections[section][name]
                helpful, harmful = record.helpful, record.harmful
                if kp.helpful != helpful or kp.harmful != harmful:
                    found = usage.get(name)
                    if found is None:
                        found = usage[name] = Usage()
                    found.last_used = now
                    found.stale = False
                    kp.helpful = helpful
                    kp.harmful = harmful
            changed = True
        elif kind in commits:
            if changed and record.at:
                state.last_updated = record.at
            state.seq = record.seq
            changed = False
        elif kind in added:  # `handlers.added`
            name, section = record.name, record.section
            if name in where or section not in sections:
                h.added(state, record)
            else:
                sections[section][name] = KeyPoint(name, record.text, record.helpful, record.harmful)
                where[name] = section
                note_name(state.high_water, name)
                usage[name] = Usage(0, 0, state.sessions)
            changed = True
        elif kind in removed:  # `handlers.removed`
            name = record.name
            section = where.pop(name, None)
            if section is not None:
                sections[section].pop(name)
            usage.pop(name, None)
            changed = True
        else:
            handler = get(kind)
            if handler is not None:
                if handler(state, record):
                    changed = True
                now = state.sessions + 1


def apply_transaction(state: PlaybookState, events: list[Any], seq: int, at: str) -> None:
    """Apply one committed transaction's events (all stamped `at`) in place; same result as `apply` on each."""
    apply_records(state, [*events, _views().commit_view(seq=seq, at=at)])


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
