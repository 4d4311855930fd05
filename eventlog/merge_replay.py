"""The merged playbook while both sides' transactions are replayed onto it: each event decided again, the
conflicts between the sides resolved and recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never, cast

import msgspec

from .decide import ApplyOperations, Evaluate, SkipReason, decide
from .domain import MAX_COUNTER, OTHERS, SECTION_SLUGS, KeyPoint, should_prune
from .events import (AnyEvent, BranchesMerged, CountersSet, CurationHeld, Event, HistoryRewritten, KeyPointAbsorbed,
                     KeyPointAdded, KeyPointDeleted, KeyPointEvaluated, KeyPointImported, KeyPointMarkedStale,
                     KeyPointMoved, KeyPointPruned, KeyPointsMerged, KeyPointUpdated, LearningCompleted,
                     LearningDeferred, LearningFailed, LearningGivenUp, LearningRequested, LearningSkipped,
                     MergeConflictResolved, ModelCallRecorded, OperationSkipped, PlaybookDisabled, PlaybookEnabled,
                     PlaybookImported, ProposalAccepted, ProposalExpired, ProposalRecorded, ProposalRejected,
                     SectionReordered, SnapshotSetAside, TailRepaired, TransactionCommitted, UnknownRecord,
                     VersionSet)
from .merge_identities import Identities
from .merge_sides import Ident, SideNames, Tx


LATER_WINS = "the later change stands (time, then transaction id)"
DELETE_WINS = "the delete stands over an update"
MERGE_WINS = "the merge stands: the merged entry carries the content"


def _clamp(value: int) -> int:
    return min(max(value, 0), MAX_COUNTER)


class MergedState(Identities):
    """The merged playbook while transactions are replayed onto it: each kind of event decided again."""

    # --- replaying --------------------------------------------------------------------------------

    def replay(self, tx: Tx, side: str, names: SideNames) -> list[Event]:
        """`tx`'s events decided again against the merged state, one for one, and applied to it."""
        out: list[Event] = []
        commit = tx.commit
        events = tx.events
        index, count = 0, len(events)
        while index < count:
            event = events[index]
            if type(event) is KeyPointEvaluated:  # a run of ratings is decided in one call: they are most of a log
                end = index + 1
                while end < count and type(events[end]) is KeyPointEvaluated:
                    end += 1
                for result in self._ratings(events[index:end], names):
                    self._emit(result, None, side, commit.tx)
                    out.append(result)
                index = end
                continue
            result, created = self._one(commit, index, event, side, names)
            self._emit(result, created, side, commit.tx)
            out.append(result)
            index += 1
        return out

    def _ratings(self, ratings: Sequence[Any], names: SideNames) -> list[Event]:
        """Ratings as increments of the merged counters, one event each; a rating of an entry gone from
        the merged playbook is a recorded skip."""
        alive: list[str] = []
        wanted: list[Any] = []
        for e in ratings:
            ident, final, name = self._find(names, e.name)
            if name is None:
                wanted.append(self._skip(e, SkipReason.UNKNOWN_ID, f"rating of {e.name}: {self._why(ident, final)}"))
            else:
                alive.append(name)
                wanted.append({"name": name, "rating": e.rating, "rationale": e.rationale})
        decided = iter(decide(self._view(dict.fromkeys(alive)), Evaluate([w for w in wanted if isinstance(w, dict)]))
                       if alive else ())
        return [next(decided) if isinstance(w, dict) else w for w in wanted]

    def _one(self, commit: TransactionCommitted, index: int, event: Event, side: str,
             names: SideNames) -> tuple[Event, Ident | None]:
        e = cast("AnyEvent | UnknownRecord", event)
        tx, at = commit.tx, e.at
        match e:
            case CountersSet():
                return self._counters(e, names), None
            case KeyPointUpdated():
                return self._update(e, tx, at, side, names), None
            case KeyPointDeleted():
                return self._delete(e, tx, at, side, names), None
            case KeyPointPruned():
                return self._prune(e, names), None
            case KeyPointMoved():
                return self._move(e, names), None
            case SectionReordered():
                return self._reorder(e, names), None
            case KeyPointMarkedStale():
                ident, final, name = self._find(names, e.name)
                if name is None:
                    reason = f"stale mark of {e.name}: {self._why(ident, final)}"
                    return self._skip(e, SkipReason.UNKNOWN_ID, reason), None
                return msgspec.structs.replace(e, name=name), None
            case KeyPointAbsorbed():
                return self._absorbed(e, names), None
            case VersionSet():
                return msgspec.structs.replace(e, previous=self.state.version), None
            case KeyPointAdded():
                return self._add(e, tx, index)
            case KeyPointImported():
                name = self._fresh(e.name, e.section)
                renamed = e.original_name if name == e.name else (e.original_name or e.name)
                return msgspec.structs.replace(e, name=name, original_name=renamed), (tx, index)
            case KeyPointsMerged():
                return self._merge(e, tx, at, index, side, names), (tx, index)
            case KeyPointEvaluated():
                raise AssertionError("ratings are replayed in runs, by `_ratings`")
            case (PlaybookImported() | OperationSkipped() | TailRepaired() | SnapshotSetAside() | HistoryRewritten()
                  | LearningRequested() | LearningCompleted() | LearningFailed() | LearningGivenUp()
                  | PlaybookDisabled() | PlaybookEnabled() | LearningSkipped() | CurationHeld() | ModelCallRecorded()
                  | LearningDeferred() | BranchesMerged() | MergeConflictResolved() | ProposalRecorded()
                  | ProposalAccepted() | ProposalRejected() | ProposalExpired() | UnknownRecord()):
                return event, None  # audit and bookkeeping records, and a newer version's: kept as they are
            case _:
                assert_never(e)

    def _counters(self, e: CountersSet, names: SideNames) -> Event:
        """A counter change as an increment of the merged counters."""
        ident, final, name = self._find(names, e.name)
        if name is None:
            return self._skip(e, SkipReason.UNKNOWN_ID, f"counters of {e.name}: {self._why(ident, final)}")
        kp = self.state.sections[self.state.where[name]][name]
        return CountersSet(name=name, helpful=_clamp(kp.helpful + e.helpful - e.previous_helpful),
                           harmful=_clamp(kp.harmful + e.harmful - e.previous_harmful),
                           previous_helpful=kp.helpful, previous_harmful=kp.harmful)

    def _absorbed(self, e: KeyPointAbsorbed, names: SideNames) -> Event:
        """An absorption into whatever entry carries the one it went into now; skipped, as a rating would be,
        when that entry is gone: the lesson it repeated was removed on purpose."""
        ident, final, name = self._find(names, e.name)
        if name is None:
            return self._skip(e, SkipReason.UNKNOWN_ID, f"absorption into {e.name}: {self._why(ident, final)}")
        return msgspec.structs.replace(e, name=name, text=self.state.sections[self.state.where[name]][name].text)

    def _prune(self, e: KeyPointPruned, names: SideNames) -> Event:
        """A prune that still meets the rule with both sides' ratings."""
        ident, final, name = self._find(names, e.name)
        if name is None or final != ident:
            return self._skip(e, SkipReason.UNKNOWN_ID, f"prune of {e.name}: {self._why(ident, final)}")
        kp = self.state.sections[self.state.where[name]][name]
        if not should_prune(kp.helpful, kp.harmful):
            return self._skip(e, "not_pruned", f"{name} no longer meets the prune rule with both branches' "
                                               f"ratings (helpful={kp.helpful}, harmful={kp.harmful})")
        return KeyPointPruned(section=self.state.where[name], name=name, text=kp.text, helpful=kp.helpful,
                              harmful=kp.harmful, rule=e.rule)

    def _move(self, e: KeyPointMoved, names: SideNames) -> Event:
        ident, final, name = self._find(names, e.name)
        if name is None or final != ident:
            return self._skip(e, SkipReason.UNKNOWN_ID, f"move of {e.name}: {self._why(ident, final)}")
        return msgspec.structs.replace(e, name=name, from_section=self.state.where[name])

    def _reorder(self, e: SectionReordered, names: SideNames) -> Event:
        ordered: list[str] = []
        for wanted in e.names:
            _ident, _final, name = self._find(names, wanted)
            if name is not None and name not in ordered:
                ordered.append(name)
        return msgspec.structs.replace(e, names=ordered)

    def _add(self, e: KeyPointAdded, tx: str, index: int) -> tuple[Event, Ident | None]:
        holders = sorted(self.texts.get(e.text, ()))
        verdict = decide(self._view(holders[:1]), ApplyOperations([{"type": "ADD", "text": e.text,
                                                                    "section": e.section}]))[0]
        if isinstance(verdict, OperationSkipped):
            if holders:  # the same lesson learned on both branches: one entry, and this side's ratings go to it
                self.alias[(tx, index)] = self.ident_of[holders[0]]
            detail = f"{verdict.detail} (as {holders[0]}, added on both branches)" if holders else verdict.detail
            return self._skip(e, verdict.reason, detail), None
        name = self._fresh(e.name, e.section)
        proposed = e.name if name != e.name else e.proposed_name
        return msgspec.structs.replace(e, name=name, proposed_name=proposed), (tx, index)

    def _update(self, e: KeyPointUpdated, tx: str, at: str, side: str, names: SideNames) -> Event:
        ident, final, name = self._find(names, e.name)
        if ident is not None and final != ident:
            merged_into = self.name_of.get(final, e.name) if final is not None else e.name
            self._conflict(merged_into, "update/merge", MERGE_WINS, self._changer(ident), tx, e.text, at)
            return self._skip(e, SkipReason.UNKNOWN_ID, f"update of {e.name}: {self._why(ident, final)}")
        if name is None:
            if final is not None and final in self.gone:
                gone_kp, deleter = self.gone[final]
                self._conflict(gone_kp.name, "update/delete", DELETE_WINS, deleter, tx, e.text, at)
            return self._skip(e, SkipReason.UNKNOWN_ID, f"update of {e.name}: {self._why(ident, final)}")
        assert final is not None
        current = self.state.sections[self.state.where[name]][name].text
        verdict = decide(self._view([name]), ApplyOperations([{"type": "UPDATE", "target_id": name, "text": e.text}]))[0]
        prior = self._conflicting(final, side)
        if prior is not None and isinstance(verdict, KeyPointUpdated):
            self._conflict(name, "update/update", LATER_WINS, tx, prior.tx, current, at)
        return verdict

    def _changer(self, ident: Ident | None) -> str:
        change = self.changed.get(ident) if ident is not None else None
        return change.tx if change is not None else ""

    def _delete(self, e: KeyPointDeleted, tx: str, at: str, side: str, names: SideNames) -> Event:
        ident, final, name = self._find(names, e.name)
        if ident is not None and final != ident:
            merged_into = self.name_of.get(final, e.name) if final is not None else e.name
            self._conflict(merged_into, "delete/merge", MERGE_WINS, self._changer(ident), tx, e.text, at)
            return self._skip(e, SkipReason.UNKNOWN_ID, f"delete of {e.name}: {self._why(ident, final)}")
        if name is None:
            return self._skip(e, SkipReason.UNKNOWN_ID, f"delete of {e.name}: {self._why(ident, final)}")
        assert final is not None
        current = self.state.sections[self.state.where[name]][name].text
        prior = self._conflicting(final, side)
        if prior is not None and prior.what == "update":
            self._conflict(name, "update/delete", DELETE_WINS, tx, prior.tx, current, at)
        return decide(self._view([name]), ApplyOperations([{"type": "DELETE", "target_id": name, "reason": e.reason}]))[0]

    def _merge(self, e: KeyPointsMerged, tx: str, at: str, index: int, side: str, names: SideNames) -> Event:
        live: list[str] = []
        gone: list[KeyPoint] = []
        missing = list(e.missing_sources)
        for source in e.sources:
            ident, final, name = self._find(names, source)
            if name is not None and final is not None:
                if name not in live:
                    live.append(name)
                current = self.state.sections[self.state.where[name]][name].text
                if final != ident:
                    self._conflict(name, "merge/merge", LATER_WINS, tx, self._changer(ident), current, at)
                elif (prior := self._conflicting(final, side)) is not None and prior.what == "update":
                    self._conflict(name, "update/merge", MERGE_WINS, tx, prior.tx, current, at)
            elif final is not None and final in self.gone:
                gone_kp, deleter = self.gone[final]
                gone.append(gone_kp)
                self._conflict(gone_kp.name, "delete/merge", MERGE_WINS, tx, deleter, gone_kp.text, at)
            else:
                missing.append(source)
        section = e.section if e.section in SECTION_SLUGS else OTHERS
        if len(live) >= 2 and not gone:
            operation = {"type": "MERGE", "source_ids": live, "merged_text": e.text, "section": section}
            verdict: Any = decide(self._view(live), ApplyOperations([operation]))[0]
            if isinstance(verdict, KeyPointsMerged):
                return msgspec.structs.replace(verdict, name=self._fresh(e.name, verdict.section),
                                               missing_sources=missing, cut_from=e.cut_from)
            return self._skip(e, verdict.reason, verdict.detail)
        if not live and not gone:
            return self._skip(e, SkipReason.TOO_FEW_SOURCES, f"merge into {e.name}: no source is left after the merge")
        kps = [self.state.sections[self.state.where[n]][n] for n in live] + gone
        return KeyPointsMerged(section=section, name=self._fresh(e.name, section), text=e.text, sources=live,
                               helpful=_clamp(sum(kp.helpful for kp in kps)),
                               harmful=_clamp(sum(kp.harmful for kp in kps)), missing_sources=missing,
                               cut_from=e.cut_from)

