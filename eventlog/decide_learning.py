"""The learner's bookkeeping decided: requests, their outcomes (model calls and deferrals included), stale
entries, duplicates merged, a held curation, the playbook switched on or off."""

from __future__ import annotations

import msgspec

from .collapse import HoldCuration
from .commands import CompleteLearning, FailLearning, MergeDuplicates, RequestLearning, SkipLearning, SweepStale
from .commands import DeferLearning, RecordModelCalls, RecordValue, SwitchPlaybook
from .decision import Decision
from .domain import next_name
from .events import CurationHeld, KeyPointDeleted, KeyPointMarkedStale, KeyPointsMerged, LearningCompleted
from .events import LearningFailed, LearningGivenUp, LearningRequested, LearningSkipped, PlaybookDisabled
from .events import LearningDeferred, ModelCallRecorded, PlaybookEnabled, ValueMeasured
from .legacy import to_jsonable


def request_learning(d: Decision, command: RequestLearning) -> None:
    if command.request not in d.state.pending:
        d.emit(LearningRequested(request=command.request, hook=command.hook, transcript=command.transcript,
                                 session=command.session, reason=command.reason))


def complete_learning(d: Decision, command: CompleteLearning) -> None:
    # A request finished elsewhere meanwhile is not finished twice: its turns would count twice.
    if command.request in d.state.pending:
        d.emit(LearningCompleted(request=command.request, transcript=command.transcript,
                                 from_line=command.from_line, through_line=command.through_line,
                                 cited=list(command.cited), injected=list(command.injected)))


def sweep_stale(d: Decision, command: SweepStale) -> None:
    state = d.state
    for section, kp in state.entries():
        used = state.usage.get(kp.name)
        idle = state.sessions - (used.last_used if used is not None else 0)
        if command.retire_after and idle >= command.retire_after:
            d.emit(KeyPointDeleted(section=section, name=kp.name, text=kp.text, reason="stale"))
        elif command.stale_after and idle >= command.stale_after and not (used is not None and used.stale):
            d.emit(KeyPointMarkedStale(name=kp.name, idle_sessions=idle))


def merge_duplicates(d: Decision, command: MergeDuplicates) -> None:
    for kept, duplicate, score in command.pairs:
        first, second = d.state.get(kept), d.state.get(duplicate)
        if first is None or second is None or kept == duplicate:
            continue  # merged or removed meanwhile
        section = d.state.where[kept]
        d.emit(KeyPointsMerged(
            section=section, name=next_name(d.state, section), text=first.text, sources=[kept, duplicate],
            helpful=first.helpful + second.helpful, harmful=first.harmful + second.harmful,
            similarity=round(score, 3), method=command.method,
        ))


def hold_curation(d: Decision, command: HoldCuration) -> None:
    loss = command.loss
    d.emit(CurationHeld(reason=command.reason, operations=to_jsonable(command.operations), entries=loss.entries,
                        removed=loss.removed, chars_before=loss.chars_before, chars_after=loss.chars_after))


def fail_learning(d: Decision, command: FailLearning) -> None:
    if command.request in d.state.pending:
        d.emit(LearningFailed(request=command.request, error=command.error, transcript=command.transcript,
                              attempt=command.attempt))
        if command.give_up:
            d.emit(LearningGivenUp(request=command.request, attempts=command.attempt or 1, error=command.error,
                                   transcript=command.transcript))


def switch_playbook(d: Decision, command: SwitchPlaybook) -> None:
    if command.enabled and d.state.disabled:
        d.emit(PlaybookEnabled(reason=command.reason))
    elif not command.enabled and not d.state.disabled:
        d.emit(PlaybookDisabled(reason=command.reason))


def skip_learning(d: Decision, command: SkipLearning) -> None:
    if command.request in d.state.pending:
        d.emit(LearningSkipped(request=command.request, reason=command.reason, transcript=command.transcript,
                               through_line=command.through_line))


def record_model_calls(d: Decision, command: RecordModelCalls) -> None:
    for call in command.calls:
        d.emit(ModelCallRecorded(**msgspec.structs.asdict(call)))


def defer_learning(d: Decision, command: DeferLearning) -> None:
    if command.request in d.state.pending:
        d.emit(LearningDeferred(request=command.request, reason=command.reason, transcript=command.transcript,
                                used_tokens=command.used_tokens, budget_tokens=command.budget_tokens))


def record_value(d: Decision, command: RecordValue) -> None:
    d.emit(msgspec.convert(command.measured, ValueMeasured))
