"""How each event type changes a state: one handler per type, used by every fold.

Each handler changes a state the caller owns, in place, and returns True when the
event changed the playbook itself (so `last_updated` moves). A handler reads only the
fields its registry entry lists in `reads`: the fold hands it a light view of the line.
"""

from __future__ import annotations

import msgspec

from . import events as ev
from .domain import MAX_ID_DIGITS, OTHERS, KeyPoint, PendingLearning, PendingProposal, PlaybookState, Usage
from .domain import legacy_number


def note_name(high_water: dict[str, int], name: str) -> None:
    """`name` is in use: the next name of its slug is issued past it."""
    slug, dash, digits = name.rpartition("-")
    highest = high_water.get(slug) if dash else None
    if digits.endswith("\n"):  # as `generate_keypoint_name`'s `$` does
        digits = digits[:-1]
    # `pat-007`, no regex: it runs per insert. isdecimal, not isdigit: `int` rejects "²", `\d` skips it.
    if highest is not None and digits.isdecimal() and len(digits) <= MAX_ID_DIGITS:
        number = int(digits)
        if number > highest:
            high_water[slug] = number
    elif (legacy := legacy_number(name)) is not None and legacy > high_water.get("kpt", 0):
        high_water["kpt"] = legacy


def _insert(state: PlaybookState, section: str, kp: KeyPoint) -> None:
    # A name that is somehow already present is replaced, keeping names unique; a section this
    # version does not know (a newer writer's) lands in OTHERS rather than failing every reader.
    name = kp.name
    if section not in state.sections:
        section = OTHERS
    if name in state.where:
        _remove(state, name)
    state.sections[section][name] = kp
    state.where[name] = section
    note_name(state.high_water, name)


def _remove(state: PlaybookState, name: str) -> KeyPoint | None:
    section = state.where.pop(name, None)
    return None if section is None else state.sections[section].pop(name)


# One small function per event type, named by its entry in `eventlog.registry` and found by
# the event's exact type: the fast form of a singledispatch, because the fold runs it once
# per line of the log. Each returns True when the event changed the playbook itself (so
# `last_updated` moves).


def imported(state: PlaybookState, e: ev.KeyPointImported) -> bool:
    name = e.name
    _insert(state, e.section, KeyPoint(name, e.text, e.helpful, e.harmful))
    state.usage[name] = Usage(0, 0, state.sessions)
    return False


def playbook_imported(state: PlaybookState, e: ev.PlaybookImported) -> bool:
    state.version = e.version
    state.last_updated = e.last_updated if e.genesis else (e.at or state.last_updated)
    return False


def added(state: PlaybookState, e: ev.KeyPointAdded) -> bool:
    name, section = e.name, e.section
    kp = KeyPoint(name, e.text, e.helpful, e.harmful)
    if name in state.where or section not in state.sections:
        _insert(state, section, kp)
    else:  # the usual case, `_insert` inlined: a fold runs this per added entry
        state.sections[section][name] = kp
        state.where[name] = section
        note_name(state.high_water, name)
    state.usage[name] = Usage(0, 0, state.sessions)
    return True


def updated(state: PlaybookState, e: ev.KeyPointUpdated) -> bool:
    if (kp := state.get(e.name)) is not None:
        kp.text = e.text
    return True


def merged(state: PlaybookState, e: ev.KeyPointsMerged) -> bool:
    together = Usage(last_used=state.sessions)
    for source in e.sources:
        if _remove(state, source) is not None and (used := state.usage.pop(source, None)) is not None:
            together.injected = max(together.injected, used.injected)
            together.cited += used.cited
    _insert(state, e.section, KeyPoint(e.name, e.text, e.helpful, e.harmful))
    state.usage[e.name] = together
    return True


def absorbed(state: PlaybookState, e: ev.KeyPointAbsorbed) -> bool:
    # A lesson learned again is as fresh as a new one, as a merge's result is.
    if e.name in state.where:
        found = state.usage.get(e.name)
        if found is None:
            found = state.usage[e.name] = Usage()
        found.last_used = max(found.last_used, state.sessions)
        found.stale = False
    return False


def removed(state: PlaybookState, e: ev.KeyPointDeleted | ev.KeyPointPruned) -> bool:
    name = e.name
    section = state.where.pop(name, None)  # `_remove`, inlined: a fold runs this per delete and prune
    if section is not None:
        state.sections[section].pop(name)
    state.usage.pop(name, None)
    return True


def counters(state: PlaybookState, e: ev.KeyPointEvaluated | ev.CountersSet) -> bool:
    section = state.where.get(e.name)
    if section is not None:
        kp = state.sections[section][e.name]
        if kp.helpful != e.helpful or kp.harmful != e.harmful:
            used(state, e.name)
        kp.helpful = e.helpful
        kp.harmful = e.harmful
    return True


def used(state: PlaybookState, name: str, now: int | None = None) -> None:
    """`name` was rated helpful or harmful (in the session under way: `sessions + 1`), or cited: fresh again."""
    found = state.usage.get(name)
    if found is None:
        found = state.usage[name] = Usage()
    found.last_used = state.sessions + 1 if now is None else now
    found.stale = False


def moved(state: PlaybookState, e: ev.KeyPointMoved) -> bool:
    if (kp := _remove(state, e.name)) is not None:
        _insert(state, e.to_section, kp)
    return True


def reordered(state: PlaybookState, e: ev.SectionReordered) -> bool:
    entries = state.sections.get(e.section)
    if entries is not None:
        ordered = {name: entries[name] for name in e.names if name in entries}
        ordered.update(entries)
        state.sections[e.section] = ordered
    return True


def version(state: PlaybookState, e: ev.VersionSet) -> bool:
    state.version = e.version
    return True


def requested(state: PlaybookState, e: ev.LearningRequested) -> bool:
    state.pending[e.request] = PendingLearning(e.request, e.hook, e.transcript, e.session, e.at)
    return False


def completed(state: PlaybookState, e: ev.LearningCompleted) -> bool:
    """A learned session: the clock of use moves on; what it was given and what it cited are counted."""
    state.sessions += 1
    usage = state.usage
    for name in e.injected:
        if name in state.where:
            found = usage.get(name)
            if found is None:
                found = usage[name] = Usage(last_used=state.sessions - 1)
            found.injected += 1
    for name in set(e.cited):
        if name in state.where:
            used(state, name, state.sessions)
            usage[name].cited += 1
    return learned(state, e)


def marked_stale(state: PlaybookState, e: ev.KeyPointMarkedStale) -> bool:
    if (found := state.usage.get(e.name)) is not None:
        found.stale = True
    return False


def learned(state: PlaybookState, e: ev.LearningCompleted | ev.LearningSkipped) -> bool:
    state.pending.pop(e.request, None)
    line = e.through_line
    if e.transcript and line is not None and line > state.progress.get(e.transcript, 0):
        state.progress[e.transcript] = line
    return False


def failed(state: PlaybookState, e: ev.LearningFailed) -> bool:
    if e.attempt is None:  # written before retries existed: the failure closed the request
        state.pending.pop(e.request, None)
    elif (pending := state.pending.get(e.request)) is not None:
        state.pending[e.request] = msgspec.structs.replace(pending, attempts=e.attempt, failed_at=e.at)
    return False


def given_up(state: PlaybookState, e: ev.LearningGivenUp) -> bool:
    state.pending.pop(e.request, None)
    return False


def disabled(state: PlaybookState, e: ev.PlaybookDisabled) -> bool:
    state.disabled = True
    return False


def enabled(state: PlaybookState, e: ev.PlaybookEnabled) -> bool:
    state.disabled = False
    return False


def housekeeping(state: PlaybookState, e: ev.Event) -> bool:
    return False


def skipped(state: PlaybookState, e: ev.OperationSkipped) -> bool:
    return False  # recorded for the audit; the playbook itself did not change


def proposed(state: PlaybookState, e: ev.ProposalRecorded) -> bool:
    state.proposals[e.proposal] = PendingProposal(e.proposal, e.operation, dict(e.base), e.request, e.at, e.tx,
                                                  e.held)
    return False


def decided(state: PlaybookState, e: ev.ProposalAccepted | ev.ProposalRejected | ev.ProposalExpired) -> bool:
    state.proposals.pop(e.proposal, None)
    return False
