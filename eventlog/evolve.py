"""evolve(state, event) -> state: the only place where events change the playbook.

`apply` changes a state the caller owns, in place, and is what every fold uses
(rebuild, time travel, revert previews, decide's scratch state), because copying
the state per event would make long logs slow. `evolve` is the pure form of the
same rules, and `fold` is `reduce(evolve, events, empty)` done with one copy.
"""

from __future__ import annotations

from collections.abc import Iterable

from .domain import OTHERS, KeyPoint, PendingLearning, PlaybookState, legacy_number, slug_number
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
    PlaybookImported,
    SectionReordered,
    SnapshotSetAside,
    TailRepaired,
    VersionSet,
)


def _note_name(state: PlaybookState, name: str) -> None:
    parsed = slug_number(name)
    if parsed is not None:
        slug, number = parsed
        if number > state.high_water.get(slug, 0):
            state.high_water[slug] = number
    elif (number := legacy_number(name)) is not None and number > state.high_water.get("kpt", 0):
        state.high_water["kpt"] = number


def _insert(state: PlaybookState, section: str, kp: KeyPoint) -> None:
    # A name that is somehow already present is replaced, keeping names unique; a section this
    # version does not know (a newer writer's) lands in OTHERS rather than failing every reader.
    if section not in state.sections:
        section = OTHERS
    _remove(state, kp.name)
    state.sections[section][kp.name] = kp
    state.where[kp.name] = section
    _note_name(state, kp.name)


def _remove(state: PlaybookState, name: str) -> KeyPoint | None:
    section = state.where.pop(name, None)
    return None if section is None else state.sections[section].pop(name)


def apply(state: PlaybookState, event: Event) -> None:
    """Apply one event to a state owned by the caller. Total: unknown events change only `seq`."""
    if event.seq:
        state.seq = event.seq
    match event:
        case KeyPointImported(section=section, name=name, text=text, helpful=helpful, harmful=harmful):
            _insert(state, section, KeyPoint(name, text, helpful, harmful))
            return
        case PlaybookImported(version=version, last_updated=last_updated, genesis=genesis):
            state.version = version
            state.last_updated = last_updated if genesis else (event.at or state.last_updated)
            return
        case KeyPointAdded(section=section, name=name, text=text, helpful=helpful, harmful=harmful):
            _insert(state, section, KeyPoint(name, text, helpful, harmful))
        case KeyPointUpdated(name=name, text=text):
            if (kp := state.get(name)) is not None:
                kp.text = text
        case KeyPointsMerged(section=section, name=name, text=text, sources=sources, helpful=h, harmful=hh):
            for source in sources:
                _remove(state, source)
            _insert(state, section, KeyPoint(name, text, h, hh))
        case KeyPointDeleted(name=name) | KeyPointPruned(name=name):
            _remove(state, name)
        case KeyPointEvaluated(name=name, helpful=helpful, harmful=harmful) | CountersSet(
            name=name, helpful=helpful, harmful=harmful
        ):
            if (kp := state.get(name)) is not None:
                kp.helpful, kp.harmful = helpful, harmful
        case KeyPointMoved(name=name, to_section=to_section):
            if (kp := _remove(state, name)) is not None:
                _insert(state, to_section, kp)
        case SectionReordered(section=section, names=names) if section in state.sections:
            entries = state.sections[section]
            ordered = {name: entries[name] for name in names if name in entries}
            ordered.update(entries)
            state.sections[section] = ordered
        case VersionSet(version=version):
            state.version = version
        case LearningRequested(request=request, hook=hook, transcript=transcript, session=session):
            state.pending[request] = PendingLearning(request, hook, transcript, session, event.at)
            return
        case LearningCompleted(request=request, transcript=transcript, through_line=line) | LearningSkipped(
            request=request, transcript=transcript, through_line=int() as line
        ):
            state.pending.pop(request, None)
            if transcript and line > state.progress.get(transcript, 0):
                state.progress[transcript] = line
            return
        case LearningFailed(request=request) | LearningSkipped(request=request):
            state.pending.pop(request, None)
            return
        case TailRepaired() | SnapshotSetAside():
            return  # housekeeping: the playbook itself did not change
    if event.at:
        state.last_updated = event.at


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
