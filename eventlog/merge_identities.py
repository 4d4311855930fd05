"""The merged playbook's identities while both sides are replayed: which entry a side's name means now, and the
bookkeeping that keeps that true as each event is applied."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, assert_never, cast

import msgspec

from .domain import MAX_ID_DIGITS, OTHERS, SECTION_SLUGS, KeyPoint, PlaybookState, legacy_number, next_name
from .events import (AnyEvent, BranchesMerged, CountersSet, CurationHeld, Event, HistoryRewritten, KeyPointAbsorbed,
                     KeyPointAdded, KeyPointDeleted, KeyPointEvaluated, KeyPointImported, KeyPointMarkedStale,
                     KeyPointMoved, KeyPointPruned, KeyPointsMerged, KeyPointUpdated, LearningCompleted,
                     LearningDeferred, LearningFailed, LearningGivenUp, LearningRequested, LearningSkipped,
                     MergeConflictResolved, ModelCallRecorded, OperationSkipped, PlaybookDisabled, PlaybookEnabled,
                     PlaybookImported, ProposalAccepted, ProposalExpired, ProposalRecorded, ProposalRejected,
                     SectionReordered, SnapshotSetAside, TailRepaired, UnknownRecord, VersionSet)
from .evolve import apply
from .merge_sides import Ident, SideNames


class Change(NamedTuple):
    side: str
    tx: str
    what: str


def _issued(state: PlaybookState, name: str) -> bool:
    """True when the merged log has already handed out `name` (the log never issues an ID twice)."""
    slug, dash, digits = name.rpartition("-")
    if dash and slug in state.high_water and digits.isdecimal() and len(digits) <= MAX_ID_DIGITS:
        return int(digits) <= state.high_water[slug]
    number = legacy_number(name)
    return number is not None and number <= state.high_water.get("kpt", 0)


class Identities:
    """The merged playbook and where each identity lives in it: the name it has now, the entry an entry was merged
    into, the entry a same-text add on the other branch became, the entries removed and by which transaction."""

    def __init__(self, state: PlaybookState) -> None:
        self.state = state
        self.name_of: dict[Ident, str] = {("", name): name for name in state.where}
        self.ident_of: dict[str, Ident] = {name: ("", name) for name in state.where}
        self.forward: dict[Ident, Ident] = {}
        """An entry merged into another -> the entry that carries it."""
        self.alias: dict[Ident, Ident] = {}
        """An entry added on both branches with the same text -> the one entry the merged log keeps."""
        self.gone: dict[Ident, tuple[KeyPoint, str]] = {}
        """Deleted or pruned entries as they were, and the transaction that removed them."""
        self.changed: dict[Ident, Change] = {}
        self.texts: dict[str, set[str]] = {}
        for _section, kp in state.entries():
            self.texts.setdefault(kp.text, set()).add(kp.name)
        self.conflicts: list[MergeConflictResolved] = []

    # --- where an entry is ----------------------------------------------------------------------

    def _find(self, names: SideNames, name: str) -> tuple[Ident | None, Ident | None, str | None]:
        """(identity on that side, identity after following merges, merged name if it is alive)."""
        ident = names.idents.get(name)
        if ident is None:
            return None, None, None
        ident = self.alias.get(ident, ident)
        final, seen = ident, set()
        while final in self.forward and final not in seen:
            seen.add(final)
            final = self.forward[final]
        current = self.name_of.get(final)
        if current is not None and self.ident_of.get(current) == final:
            return ident, final, current
        return ident, final, None

    def _view(self, names: Iterable[str]) -> PlaybookState:
        """A state holding just `names`, for `decide` to judge one request against (it copies what it gets)."""
        view = PlaybookState(version=self.state.version, high_water=self.state.high_water)
        for name in names:
            section = self.state.where[name]
            view.sections[section][name] = self.state.sections[section][name]
            view.where[name] = section
        return view

    def _fresh(self, wanted: str, section: str) -> str:
        if wanted not in self.state.where and not _issued(self.state, wanted):
            return wanted
        return next_name(self.state, section if section in SECTION_SLUGS else OTHERS)

    def _conflicting(self, ident: Ident, side: str) -> Change | None:
        prior = self.changed.get(ident)
        if prior is None or prior.side == side or "both" in (prior.side, side):
            return None
        return prior

    def _conflict(self, name: str, conflict: str, rule: str, kept: str, lost: str, text: str | None, at: str) -> None:
        self.conflicts.append(MergeConflictResolved(name=name, conflict=conflict, rule=rule, kept_tx=kept,
                                                    lost_tx=lost, lost_text=text, at=at))

    def _skip(self, event: Event, reason: str, detail: str) -> OperationSkipped:
        operation = msgspec.to_builtins(event)
        for envelope in ("seq", "tx", "at"):
            operation.pop(envelope, None)
        return OperationSkipped(kind="merge", reason=reason, detail=detail, operation=operation)

    def _why(self, ident: Ident | None, final: Ident | None) -> str:
        if final is not None and final in self.gone:
            return f"deleted on the other branch by {self.gone[final][1]}"
        if ident is not None and final != ident:
            return "merged into another entry on the other branch"
        return "not in the merged playbook"

    # --- keeping the identities in step with what is applied ---------------------------------------

    def _emit(self, event: Event, created: Ident | None, side: str, tx: str) -> None:
        """Apply `event` to the merged state and keep the identity maps in step with it."""
        e = cast("AnyEvent | UnknownRecord", event)
        match e:
            case KeyPointAdded() | KeyPointImported():
                apply(self.state, e)
                self._created(e, created)
            case KeyPointsMerged():
                self._merged_away(e.sources, created, side, tx)
                apply(self.state, e)
                self._created(e, created)
            case KeyPointDeleted() | KeyPointPruned():
                self._removed(e.name, side, tx)
                apply(self.state, e)
            case KeyPointUpdated():
                kp = self.state.get(e.name)
                if kp is not None:
                    self.texts.get(kp.text, set()).discard(e.name)
                    self.texts.setdefault(e.text, set()).add(e.name)
                    self.changed[self.ident_of[e.name]] = Change(side, tx, "update")
                apply(self.state, e)
            case (KeyPointEvaluated() | KeyPointMoved() | CountersSet() | SectionReordered() | VersionSet()
                  | KeyPointMarkedStale() | KeyPointAbsorbed() | PlaybookImported() | OperationSkipped() | TailRepaired()
                  | SnapshotSetAside() | HistoryRewritten() | LearningRequested() | LearningCompleted()
                  | LearningFailed() | LearningGivenUp() | PlaybookDisabled() | PlaybookEnabled() | LearningSkipped()
                  | CurationHeld() | ModelCallRecorded() | LearningDeferred() | BranchesMerged()
                  | MergeConflictResolved() | ProposalRecorded() | ProposalAccepted() | ProposalRejected()
                  | ProposalExpired() | UnknownRecord()):
                apply(self.state, event)  # no entry is created or removed: names and identities stay as they are
            case _:
                assert_never(e)

    def _created(self, event: Any, created: Ident | None) -> None:
        """An entry the merged log now holds under `event.name`, with the identity it was created with."""
        assert created is not None
        self.name_of[created] = event.name
        self.ident_of[event.name] = created
        self.texts.setdefault(event.text, set()).add(event.name)

    def _merged_away(self, sources: Sequence[str], created: Ident | None, side: str, tx: str) -> None:
        """Merge sources, before the merge is applied: each now forwards to the merged entry."""
        assert created is not None
        for source in sources:
            kp = self.state.get(source)
            if kp is not None:
                self.texts.get(kp.text, set()).discard(source)
            source_ident = self.ident_of.pop(source, None)
            if source_ident is not None:
                self.forward[source_ident] = created
                self.changed[source_ident] = Change(side, tx, "merge")

    def _removed(self, name: str, side: str, tx: str) -> None:
        """An entry about to be deleted or pruned: kept as it was, with the transaction that removed it."""
        kp = self.state.get(name)
        ident = self.ident_of.pop(name, None)
        if kp is not None:
            self.texts.get(kp.text, set()).discard(name)
            if ident is not None:
                self.gone[ident] = (KeyPoint(kp.name, kp.text, kp.helpful, kp.harmful), tx)
                self.changed[ident] = Change(side, tx, "delete")
