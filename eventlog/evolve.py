"""evolve(state, event) -> state: the only place where events change the playbook.

`apply` changes a state the caller owns, in place, and is what every fold uses
(rebuild, time travel, revert previews, decide's scratch state), because copying
the state per event would make long logs slow. `evolve` is the pure form of the
same rules, and `fold` is `reduce(evolve, events, empty)` done with one copy.
`apply_records` is the same rules over a run of log records, commits included:
the loop the store's fold runs, on records decoded as the light `FOLD_VIEWS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Union

from .domain import MAX_ID_DIGITS, OTHERS, KeyPoint, PendingLearning, PlaybookState, legacy_number
from .events import (
    CountersSet,
    LearningCompleted,
    LearningFailed,
    LearningRequested,
    LearningSkipped,
    Event,
    KeyPointAdded,
    KeyPointDeleted,
    KeyPointEvaluated,
    KeyPointImported,
    KeyPointMoved,
    KeyPointPruned,
    KeyPointsMerged,
    KeyPointUpdated,
    OperationSkipped,
    PlaybookImported,
    SectionReordered,
    SnapshotSetAside,
    TailRepaired,
    TransactionCommitted,
    VersionSet,
    record_view,
)


def _note_name(state: PlaybookState, name: str) -> None:
    high_water = state.high_water
    slug, dash, digits = name.rpartition("-")
    if digits.endswith("\n"):  # as `generate_keypoint_name`'s `$` does
        digits = digits[:-1]
    # `pat-007`, no regex: it runs per insert. isdecimal, not isdigit: `int` rejects "²", `\d` skips it.
    if dash and slug in high_water and digits.isdecimal() and len(digits) <= MAX_ID_DIGITS:
        number = int(digits)
        if number > high_water[slug]:
            high_water[slug] = number
    elif (number := legacy_number(name)) is not None and number > high_water.get("kpt", 0):
        high_water["kpt"] = number


def _insert(state: PlaybookState, section: str, kp: KeyPoint) -> None:
    # A name that is somehow already present is replaced, keeping names unique; a section this
    # version does not know (a newer writer's) lands in OTHERS rather than failing every reader.
    if section not in state.sections:
        section = OTHERS
    if kp.name in state.where:
        _remove(state, kp.name)
    state.sections[section][kp.name] = kp
    state.where[kp.name] = section
    _note_name(state, kp.name)


def _remove(state: PlaybookState, name: str) -> KeyPoint | None:
    section = state.where.pop(name, None)
    return None if section is None else state.sections[section].pop(name)


# One small function per event type, found through `_APPLY` by the event's exact type: the
# fast form of a singledispatch, because the fold runs it once per line of the log. Each
# returns True when the event changed the playbook itself (so `last_updated` moves).


def _imported(state: PlaybookState, e: KeyPointImported) -> bool:
    _insert(state, e.section, KeyPoint(e.name, e.text, e.helpful, e.harmful))
    return False


def _playbook_imported(state: PlaybookState, e: PlaybookImported) -> bool:
    state.version = e.version
    state.last_updated = e.last_updated if e.genesis else (e.at or state.last_updated)
    return False


def _added(state: PlaybookState, e: KeyPointAdded) -> bool:
    _insert(state, e.section, KeyPoint(e.name, e.text, e.helpful, e.harmful))
    return True


def _updated(state: PlaybookState, e: KeyPointUpdated) -> bool:
    if (kp := state.get(e.name)) is not None:
        kp.text = e.text
    return True


def _merged(state: PlaybookState, e: KeyPointsMerged) -> bool:
    for source in e.sources:
        _remove(state, source)
    _insert(state, e.section, KeyPoint(e.name, e.text, e.helpful, e.harmful))
    return True


def _removed(state: PlaybookState, e: KeyPointDeleted | KeyPointPruned) -> bool:
    _remove(state, e.name)
    return True


def _counters(state: PlaybookState, e: KeyPointEvaluated | CountersSet) -> bool:
    section = state.where.get(e.name)
    if section is not None:
        kp = state.sections[section][e.name]
        kp.helpful = e.helpful
        kp.harmful = e.harmful
    return True


def _moved(state: PlaybookState, e: KeyPointMoved) -> bool:
    if (kp := _remove(state, e.name)) is not None:
        _insert(state, e.to_section, kp)
    return True


def _reordered(state: PlaybookState, e: SectionReordered) -> bool:
    entries = state.sections.get(e.section)
    if entries is not None:
        ordered = {name: entries[name] for name in e.names if name in entries}
        ordered.update(entries)
        state.sections[e.section] = ordered
    return True


def _version(state: PlaybookState, e: VersionSet) -> bool:
    state.version = e.version
    return True


def _requested(state: PlaybookState, e: LearningRequested) -> bool:
    state.pending[e.request] = PendingLearning(e.request, e.hook, e.transcript, e.session, e.at)
    return False


def _learned(state: PlaybookState, e: LearningCompleted | LearningSkipped) -> bool:
    state.pending.pop(e.request, None)
    line = e.through_line
    if e.transcript and line is not None and line > state.progress.get(e.transcript, 0):
        state.progress[e.transcript] = line
    return False


def _failed(state: PlaybookState, e: LearningFailed) -> bool:
    state.pending.pop(e.request, None)
    return False


def _housekeeping(state: PlaybookState, e: Event) -> bool:
    return False


def _skipped(state: PlaybookState, e: OperationSkipped) -> bool:
    return False  # recorded for the audit; the playbook itself did not change


_APPLY: dict[type, Callable[[PlaybookState, Any], bool]] = {
    KeyPointImported: _imported,
    PlaybookImported: _playbook_imported,
    KeyPointAdded: _added,
    KeyPointUpdated: _updated,
    KeyPointsMerged: _merged,
    KeyPointDeleted: _removed,
    KeyPointPruned: _removed,
    KeyPointEvaluated: _counters,
    CountersSet: _counters,
    KeyPointMoved: _moved,
    SectionReordered: _reordered,
    VersionSet: _version,
    OperationSkipped: _skipped,
    LearningRequested: _requested,
    LearningCompleted: _learned,
    LearningSkipped: _learned,
    LearningFailed: _failed,
    TailRepaired: _housekeeping,
    SnapshotSetAside: _housekeeping,
}


def apply(state: PlaybookState, event: Event) -> None:
    """Apply one event to a state owned by the caller. Total: an unknown event changes only `seq`."""
    if event.seq:
        state.seq = event.seq
    handler = _APPLY.get(type(event))
    if handler is not None and handler(state, event) and event.at:
        state.last_updated = event.at


# What each handler reads of its event. The fold decodes lines as views that hold only
# these fields (see `record_view`), so a field a handler starts to read must be added
# here; the fold tests, which fold every event type both ways, fail until it is.
_READS: dict[type, tuple[str, ...]] = {
    KeyPointImported: ("section", "name", "text", "helpful", "harmful"),
    PlaybookImported: ("at", "version", "last_updated", "genesis"),
    KeyPointAdded: ("section", "name", "text", "helpful", "harmful"),
    KeyPointUpdated: ("name", "text"),
    KeyPointsMerged: ("section", "name", "text", "sources", "helpful", "harmful"),
    KeyPointDeleted: ("name",),
    KeyPointPruned: ("name",),
    KeyPointEvaluated: ("name", "helpful", "harmful"),
    CountersSet: ("name", "helpful", "harmful"),
    KeyPointMoved: ("name", "to_section"),
    SectionReordered: ("section", "names"),
    VersionSet: ("version",),
    OperationSkipped: (),
    LearningRequested: ("at", "request", "hook", "transcript", "session"),
    LearningCompleted: ("request", "transcript", "through_line"),
    LearningSkipped: ("request", "transcript", "through_line"),
    LearningFailed: ("request",),
    TailRepaired: (),
    SnapshotSetAside: (),
    TransactionCommitted: ("seq", "at"),
}
_VIEW_OF: dict[type, type] = {kind: record_view(kind, fields) for kind, fields in _READS.items()}
FOLD_VIEWS: Any = Union[tuple(_VIEW_OF.values())]  # type: ignore[valid-type]
"""Every record type as the fold reads it: decode with `msgspec.json.Decoder(FOLD_VIEWS)`."""

_HANDLERS: dict[type, Callable[[PlaybookState, Any], bool]] = {
    **_APPLY, **{_VIEW_OF[kind]: handler for kind, handler in _APPLY.items()}
}
_EVALUATED = (KeyPointEvaluated, _VIEW_OF[KeyPointEvaluated])
CommitView = _VIEW_OF[TransactionCommitted]
"""The fold's view of a `TransactionCommitted` line."""


def apply_records(state: PlaybookState, records: list) -> None:
    """Apply whole committed transactions, given as their records in log order, in place.

    Each transaction is its events followed by its commit record; events and commits may
    be the records themselves or their `FOLD_VIEWS`. Same result as `apply_transaction`
    on each transaction; records after the last commit must not be passed.
    """
    get = _HANDLERS.get
    where, sections = state.where, state.sections
    evaluated, evaluated_view = _EVALUATED
    changed = False
    for record in records:
        kind = type(record)
        if kind is evaluated_view or kind is evaluated:  # about half of any log: `_counters`, inlined
            section = where.get(record.name)
            if section is not None:
                kp = sections[section][record.name]
                kp.helpful = record.helpful
                kp.harmful = record.harmful
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


def apply_transaction(state: PlaybookState, events: list, seq: int, at: str) -> None:
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
