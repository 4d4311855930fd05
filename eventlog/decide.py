"""decide(state, command) -> events: every rule of the spec, and nowhere else.

Pure: no I/O, and `state` is never changed. Within one command, each request is
decided against the state left by the ones before it (REQ-CUR-005); a request
that is not applied becomes an `OperationSkipped` event saying why.

The commands themselves are `eventlog.commands`' (importable from here too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import msgspec

from .domain import MAX_TEXT_LENGTH, OTHERS, PRUNE_RULE, SECTION_SLUGS, PlaybookState, next_name
from .domain import resolve_section_detail, should_prune
from .events import CountersSet, CurationHeld, Event, KeyPointAdded, KeyPointDeleted, KeyPointEvaluated
from .events import KeyPointImported, KeyPointMarkedStale, KeyPointMoved, KeyPointPruned, KeyPointsMerged
from .events import KeyPointUpdated, LearningCompleted, LearningFailed, LearningRequested, LearningSkipped
from .events import OperationSkipped, PlaybookImported, ProposalAccepted, ProposalExpired, ProposalRecorded
from .events import ProposalRejected, SectionReordered, VersionSet
from .events import LearningGivenUp, PlaybookDisabled, PlaybookEnabled, LearningDeferred, ModelCallRecorded
from .collapse import HoldCuration
from .commands import AddNewKeyPoints, ApplyOperations, Command, CompleteLearning, Evaluate, FailLearning
from .commands import ImportLegacy, MergeDuplicates, Prune, RecordUnreadableFile, ReplaceContent, RequestLearning
from .commands import AcceptProposal, ExpireProposals, ProposeOperations, RejectProposal, SkipLearning, SkipReason
from .commands import SweepStale, SwitchPlaybook, RecordModelCalls, DeferLearning
from .evolve import apply, fold
from .legacy import NormalizedPlaybook, normalize_playbook, to_jsonable
from .values import Origin, SkipKind, SkipReasonName

__all__ = [  # the commands, re-exported: callers import them with decide
    "AcceptProposal", "AddNewKeyPoints", "ApplyOperations", "Command", "CompleteLearning", "Evaluate",
    "ExpireProposals", "FailLearning", "HoldCuration", "ImportLegacy", "MergeDuplicates", "ProposeOperations",
    "Prune", "RecordUnreadableFile", "RejectProposal", "ReplaceContent", "RequestLearning", "SkipLearning",
    "SkipReason", "SweepStale", "SwitchPlaybook", "RecordModelCalls", "DeferLearning", "content_state", "decide",
    "decide_all", "import_events", "proposal_conflict",
]

MAX_OPERATIONS = 10
RATINGS = ("helpful", "harmful", "neutral")


class _Decision:
    """Events decided so far, applied to a scratch state so later requests see earlier ones."""

    def __init__(self, state: PlaybookState) -> None:
        self.state = state.copy()
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        apply(self.state, event)
        self.events.append(event)

    def skip(self, kind: SkipKind, reason: SkipReasonName, detail: str, index: int | None = None,
             item: Any = None) -> None:
        self.emit(OperationSkipped(kind=kind, reason=reason, detail=detail, index=index, operation=to_jsonable(item)))


def decide(state: PlaybookState, command: Command) -> list[Event]:
    """The events that carry out `command` on `state`."""
    return decide_all(state, [command])


def decide_all(state: PlaybookState, commands: Sequence[Command]) -> list[Event]:
    """The events of several commands in order, each decided after the ones before it."""
    decision = _Decision(state)
    for command in commands:
        _HANDLERS[type(command)](decision, command)
    return decision.events


# --- operations ----------------------------------------------------------------------------------


def _text(value: Any) -> tuple[str | None, SkipReasonName | None, int | None]:
    """(text cut to MAX_TEXT_LENGTH, reason it is unusable, its length as given when it was cut)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, SkipReason.EMPTY_TEXT, None
    if not isinstance(value, str):
        return None, SkipReason.INVALID_TEXT, None
    if len(value) > MAX_TEXT_LENGTH:
        return value[:MAX_TEXT_LENGTH], None, len(value)
    return value, None, None


def _add(d: _Decision, kind: SkipKind, index: int, item: Any, text: Any, section_name: Any, origin: Origin) -> None:
    value, problem, cut_from = _text(text)
    if value is None:
        d.skip(kind, problem or SkipReason.EMPTY_TEXT, "ADD without text", index, item)
        return
    if value in d.state.texts():
        d.skip(kind, SkipReason.DUPLICATE_TEXT, f"text already in the playbook: {value[:80]}", index, item)
        return
    section, unknown = resolve_section_detail(section_name)
    d.emit(
        KeyPointAdded(
            section=section, name=next_name(d.state, section), text=value, helpful=0, harmful=0, origin=origin,
            requested_section=section_name if unknown else None, cut_from=cut_from,
        )
    )


def _target(d: _Decision, kind: SkipKind, index: int, op: dict[str, Any], verb: str) -> str | None:
    target = op.get("target_id")
    if not isinstance(target, str) or not target.strip():
        d.skip(kind, SkipReason.EMPTY_TARGET_ID, f"{verb} without target_id", index, op)
        return None
    if d.state.get(target) is None:
        d.skip(kind, SkipReason.UNKNOWN_ID, f"{verb} of unknown id {target}", index, op)
        return None
    return target


def _operation(d: _Decision, index: int, op: Any, origin: Origin = "operation") -> None:
    kind: SkipKind = "operation"
    if not isinstance(op, dict):
        d.skip(kind, SkipReason.NOT_AN_OBJECT, f"operation of type {type(op).__name__}", index, op)
        return
    op_type = op.get("type", "")
    if op_type == "ADD":
        _add(d, kind, index, op, op.get("text"), op.get("section"), origin)
    elif op_type == "UPDATE":
        text, problem, cut_from = _text(op.get("text"))
        target = op.get("target_id")
        if not isinstance(target, str) or not target.strip():
            d.skip(kind, SkipReason.EMPTY_TARGET_ID, "UPDATE without target_id", index, op)
        elif text is None:
            d.skip(kind, problem or SkipReason.EMPTY_TEXT, f"UPDATE of {target} without text", index, op)
        elif (kp := d.state.get(target)) is None:
            d.skip(kind, SkipReason.UNKNOWN_ID, f"UPDATE of unknown id {target}", index, op)
        elif kp.text == text:
            d.skip(kind, SkipReason.UNCHANGED_TEXT, f"UPDATE of {target} with its current text", index, op)
        else:
            d.emit(KeyPointUpdated(name=target, text=text, previous_text=kp.text, cut_from=cut_from))
    elif op_type == "DELETE":
        if (target := _target(d, kind, index, op, "DELETE")) is not None:
            kp = d.state.get(target)
            assert kp is not None
            reason = op.get("reason")
            d.emit(
                KeyPointDeleted(
                    section=d.state.where[target], name=target, text=kp.text,
                    reason=reason if isinstance(reason, str) else ("" if reason is None else str(to_jsonable(reason))),
                )
            )
    elif op_type == "MERGE":
        _merge(d, index, op)
    else:
        shown = op_type if isinstance(op_type, str) else repr(to_jsonable(op_type))
        d.skip(kind, SkipReason.UNKNOWN_TYPE, f"unknown operation type {shown!r}", index, op)


def _merge(d: _Decision, index: int, op: dict[str, Any]) -> None:
    kind: SkipKind = "operation"
    source_ids = op.get("source_ids")
    text, problem, cut_from = _text(op.get("merged_text"))
    if not isinstance(source_ids, list) or len(source_ids) < 2:
        d.skip(kind, SkipReason.TOO_FEW_SOURCES, "MERGE needs at least two source_ids", index, op)
        return
    if text is None:
        reason = SkipReason.EMPTY_MERGED_TEXT if problem == SkipReason.EMPTY_TEXT else problem
        d.skip(kind, reason or SkipReason.EMPTY_MERGED_TEXT, "MERGE without merged_text", index, op)
        return
    valid: list[str] = []
    missing: list[str] = []
    for source in source_ids:
        if isinstance(source, str) and d.state.get(source) is not None:
            if source not in valid:
                valid.append(source)
        else:
            missing.append(source if isinstance(source, str) else repr(to_jsonable(source)))
    if len(valid) < 2:
        d.skip(
            kind, SkipReason.TOO_FEW_SOURCES,
            f"MERGE has {len(valid)} existing source id(s); unknown: {', '.join(missing) or 'none'}", index, op,
        )
        return
    section, _unknown = resolve_section_detail(op.get("section"))
    if section == OTHERS and not _names_others(op.get("section")):
        section = d.state.where[valid[0]]
    sources = [d.state.get(name) for name in valid]
    d.emit(
        KeyPointsMerged(
            section=section, name=next_name(d.state, section), text=text, sources=valid,
            helpful=sum(kp.helpful for kp in sources if kp), harmful=sum(kp.harmful for kp in sources if kp),
            missing_sources=missing, cut_from=cut_from,
        )
    )


def _names_others(section_name: Any) -> bool:
    return isinstance(section_name, str) and section_name.strip().upper() == OTHERS


def _apply_operations(d: _Decision, command: ApplyOperations) -> None:
    operations = command.operations
    if not isinstance(operations, list):
        d.skip("operation", SkipReason.NOT_A_LIST, "operations is not a list", None, operations)
        return
    if len(operations) > MAX_OPERATIONS:
        d.skip(
            "operation", SkipReason.TRUNCATED,
            f"{len(operations)} operations given, truncated to {MAX_OPERATIONS}", MAX_OPERATIONS,
            operations[MAX_OPERATIONS:],
        )
    for index, op in enumerate(operations[:MAX_OPERATIONS]):
        _operation(d, index, op, command.origin)


def _add_new_key_points(d: _Decision, command: AddNewKeyPoints) -> None:
    items = command.new_key_points
    if not isinstance(items, list):
        if items is not None:
            d.skip("new_key_point", SkipReason.NOT_A_LIST, "new_key_points is not a list", None, items)
        return
    for index, item in enumerate(items):
        if isinstance(item, str):
            _add(d, "new_key_point", index, item, item, OTHERS, "new_key_point")
        elif isinstance(item, dict):
            _add(d, "new_key_point", index, item, item.get("text"), item.get("section"), "new_key_point")
        else:
            d.skip("new_key_point", SkipReason.NOT_AN_OBJECT, f"new key point of type {type(item).__name__}", index, item)


def _evaluate(d: _Decision, command: Evaluate) -> None:
    evaluations = command.evaluations
    if not isinstance(evaluations, list):
        if evaluations is not None:
            d.skip("evaluation", SkipReason.NOT_A_LIST, "evaluations is not a list", None, evaluations)
        return
    for index, item in enumerate(evaluations):
        if not isinstance(item, dict):
            d.skip("evaluation", SkipReason.NOT_AN_OBJECT, f"evaluation of type {type(item).__name__}", index, item)
            continue
        name, rating = item.get("name"), item.get("rating")
        kp = d.state.get(name) if isinstance(name, str) else None
        if kp is None or not isinstance(name, str):
            d.skip("evaluation", SkipReason.UNKNOWN_ID, f"evaluation of unknown id {name!r}", index, item)
        elif rating not in RATINGS:
            d.skip("evaluation", SkipReason.UNKNOWN_RATING, f"unknown rating {rating!r} for {name}", index, item)
        else:
            rationale = item.get("rationale")
            d.emit(
                KeyPointEvaluated(
                    name=name, rating=rating,
                    helpful=kp.helpful + (rating == "helpful"), harmful=kp.harmful + (rating == "harmful"),
                    rationale=rationale if isinstance(rationale, str) and rationale else None,
                )
            )


def _prune(d: _Decision, command: Prune) -> None:
    for section, kp in d.state.entries():
        if should_prune(kp.helpful, kp.harmful):
            d.emit(
                KeyPointPruned(
                    section=section, name=kp.name, text=kp.text, helpful=kp.helpful, harmful=kp.harmful,
                    rule=PRUNE_RULE,
                )
            )


# --- import and whole-content changes -----------------------------------------------------------


def import_events(normalized: NormalizedPlaybook, path: str, genesis: bool, kept_at: str | None = None) -> list[Event]:
    events: list[Event] = [
        PlaybookImported(
            path=path, file_format=normalized.file_format, version=normalized.version,
            last_updated=normalized.last_updated, genesis=genesis, entries=len(normalized.entries),
            ignored_key_points=normalized.ignored_key_points, moved_aside=kept_at,
        )
    ]
    for entry in normalized.entries:
        events.append(
            KeyPointImported(
                section=entry.section, name=entry.name, text=entry.text, helpful=entry.helpful,
                harmful=entry.harmful, source_format=entry.source_format, original_name=entry.original_name,
                original_section=entry.original_section, score=entry.score,
            )
        )
    for rejected in normalized.rejected:
        events.append(OperationSkipped(kind="import", reason=rejected.reason, detail=rejected.detail, operation=rejected.item))
    return events


def _import_legacy(d: _Decision, command: ImportLegacy) -> None:
    normalized = normalize_playbook(command.data)
    present: list[OperationSkipped] = []
    if not command.genesis:
        # An entry whose text the playbook already holds is not imported again: importing the same
        # file twice would otherwise double every entry under new ids.
        held = {kp.text: kp.name for _, kp in d.state.entries()}
        kept = []
        for index, entry in enumerate(normalized.entries):
            if entry.text in held:
                present.append(OperationSkipped(
                    kind="import", reason=SkipReason.DUPLICATE_TEXT, index=index,
                    detail=f"already in the playbook as {held[entry.text]}",
                    operation={"name": entry.original_name or entry.name, "text": entry.text}))
            else:
                kept.append(entry)
        # Into a live log, an imported name must not collide with an existing one.
        normalized = _rename_for(d.state, msgspec.structs.replace(normalized, entries=kept))
    for event in import_events(normalized, command.path, command.genesis, command.kept_at):
        d.emit(event)
    for event in present:
        d.emit(event)


def _rename_for(state: PlaybookState, normalized: NormalizedPlaybook) -> NormalizedPlaybook:
    scratch = state.copy()
    entries = []
    for entry in normalized.entries:
        if scratch.get(entry.name) is not None:
            entry = msgspec.structs.replace(
                entry, name=next_name(scratch, entry.section), original_name=entry.original_name or entry.name
            )
        apply(scratch, KeyPointImported(section=entry.section, name=entry.name, text=entry.text, helpful=0,
                                        harmful=0, source_format=entry.source_format))
        entries.append(entry)
    return msgspec.structs.replace(normalized, entries=entries)


def _record_unreadable(d: _Decision, command: RecordUnreadableFile) -> None:
    d.emit(
        PlaybookImported(
            path=command.path, file_format="unreadable", version=d.state.version,
            last_updated=d.state.last_updated, genesis=True, moved_aside=command.moved_aside, error=command.error,
        )
    )


def content_state(data: Any) -> tuple[PlaybookState, NormalizedPlaybook]:
    """The state a playbook dict describes, read with the legacy rules."""
    normalized = normalize_playbook(data)
    state = fold(import_events(normalized, "", genesis=True))
    return state, normalized


def _replace_content(d: _Decision, command: ReplaceContent) -> None:
    target, normalized = content_state(command.target)
    for rejected in normalized.rejected:
        d.skip("change", rejected.reason, rejected.detail, None, rejected.item)
    base = command.base if command.base is not None else d.state.copy()
    origin = command.origin
    for section, kp in base.entries():
        if target.get(kp.name) is None and (current := d.state.get(kp.name)) is not None:
            d.emit(KeyPointDeleted(section=d.state.where[kp.name], name=kp.name, text=current.text,
                                   reason=f"removed by {origin}"))
    renamed: dict[str, str] = {}
    found_in = {entry.name: entry.original_section for entry in normalized.entries}
    for section, kp in target.entries():
        before = base.get(kp.name)
        if before is None:
            # A name the caller chose is kept unless a concurrent writer took it meanwhile.
            name = kp.name if d.state.get(kp.name) is None else next_name(d.state, section)
            renamed[kp.name] = name
            d.emit(KeyPointAdded(section=section, name=name, text=kp.text, helpful=kp.helpful, harmful=kp.harmful,
                                 origin=origin, proposed_name=kp.name if name != kp.name else None,
                                 requested_section=found_in.get(kp.name)))
            continue
        current = d.state.get(kp.name)
        if current is None:
            d.skip("change", SkipReason.UNKNOWN_ID, f"{kp.name} was removed meanwhile; its change is not applied",
                   None, {"name": kp.name, "text": kp.text})
            continue
        if kp.text != before.text and kp.text != current.text:
            d.emit(KeyPointUpdated(name=kp.name, text=kp.text, previous_text=current.text))
        helpful = max(current.helpful + kp.helpful - before.helpful, 0)
        harmful = max(current.harmful + kp.harmful - before.harmful, 0)
        if (helpful, harmful) != (current.helpful, current.harmful):
            d.emit(CountersSet(name=kp.name, helpful=helpful, harmful=harmful,
                               previous_helpful=current.helpful, previous_harmful=current.harmful))
        if section != base.where[kp.name] and d.state.where[kp.name] != section:
            d.emit(KeyPointMoved(name=kp.name, from_section=d.state.where[kp.name], to_section=section))
    if target.version != base.version and target.version != d.state.version:
        d.emit(VersionSet(version=target.version, previous=d.state.version))
    for section in SECTION_SLUGS:
        present = d.state.sections[section]
        wanted = [renamed.get(name, name) for name in target.sections[section]]
        wanted = [name for name in wanted if name in present]
        wanted_set = set(wanted)
        if [name for name in present if name in wanted_set] != wanted:
            d.emit(SectionReordered(section=section, names=wanted + [n for n in present if n not in wanted_set]))


# --- learning bookkeeping -------------------------------------------------------------------------


def _request_learning(d: _Decision, command: RequestLearning) -> None:
    if command.request not in d.state.pending:
        d.emit(LearningRequested(request=command.request, hook=command.hook, transcript=command.transcript,
                                 session=command.session, reason=command.reason))


def _complete_learning(d: _Decision, command: CompleteLearning) -> None:
    # A request finished elsewhere meanwhile is not finished twice: its turns would count twice.
    if command.request in d.state.pending:
        d.emit(LearningCompleted(request=command.request, transcript=command.transcript,
                                 from_line=command.from_line, through_line=command.through_line,
                                 cited=list(command.cited), injected=list(command.injected)))


def _sweep_stale(d: _Decision, command: SweepStale) -> None:
    state = d.state
    for section, kp in state.entries():
        used = state.usage.get(kp.name)
        idle = state.sessions - (used.last_used if used is not None else 0)
        if command.retire_after and idle >= command.retire_after:
            d.emit(KeyPointDeleted(section=section, name=kp.name, text=kp.text, reason="stale"))
        elif command.stale_after and idle >= command.stale_after and not (used is not None and used.stale):
            d.emit(KeyPointMarkedStale(name=kp.name, idle_sessions=idle))


def _merge_duplicates(d: _Decision, command: MergeDuplicates) -> None:
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


def _hold_curation(d: _Decision, command: HoldCuration) -> None:
    loss = command.loss
    d.emit(CurationHeld(reason=command.reason, operations=to_jsonable(command.operations), entries=loss.entries,
                        removed=loss.removed, chars_before=loss.chars_before, chars_after=loss.chars_after))


def _fail_learning(d: _Decision, command: FailLearning) -> None:
    if command.request in d.state.pending:
        d.emit(LearningFailed(request=command.request, error=command.error, transcript=command.transcript,
                              attempt=command.attempt))
        if command.give_up:
            d.emit(LearningGivenUp(request=command.request, attempts=command.attempt or 1, error=command.error,
                                   transcript=command.transcript))


def _switch_playbook(d: _Decision, command: SwitchPlaybook) -> None:
    if command.enabled and d.state.disabled:
        d.emit(PlaybookEnabled(reason=command.reason))
    elif not command.enabled and not d.state.disabled:
        d.emit(PlaybookDisabled(reason=command.reason))


def _skip_learning(d: _Decision, command: SkipLearning) -> None:
    if command.request in d.state.pending:
        d.emit(LearningSkipped(request=command.request, reason=command.reason, transcript=command.transcript,
                               through_line=command.through_line))


# --- review ---------------------------------------------------------------------------------------


def _aimed_at(state: PlaybookState, op: Any) -> dict[str, str]:
    """The entries `op` changes, with their text now: what an accept re-checks."""
    if not isinstance(op, dict):
        return {}
    names: list[Any] = [op.get("target_id")] if op.get("type") in ("UPDATE", "DELETE") else []
    if op.get("type") == "MERGE" and isinstance(op.get("source_ids"), list):
        names = list(op["source_ids"])
    return {name: kp.text for name in names if isinstance(name, str) and (kp := state.get(name)) is not None}


def _propose_operations(d: _Decision, command: ProposeOperations) -> None:
    operations = command.operations
    if not isinstance(operations, list) or len(operations) > MAX_OPERATIONS:
        # Not a list, or too many: recorded exactly as a direct cycle records it, and what a direct
        # cycle would still apply (the first MAX_OPERATIONS) is proposed below.
        trial = _Decision(d.state)
        _apply_operations(trial, ApplyOperations(operations))
        for event in trial.events:
            if isinstance(event, OperationSkipped) and event.reason in (SkipReason.NOT_A_LIST, SkipReason.TRUNCATED):
                d.emit(event)
        if not isinstance(operations, list):
            return
    for index, op in enumerate(operations[:MAX_OPERATIONS]):
        trial = _Decision(d.state)
        _operation(trial, index, op)
        if all(isinstance(event, OperationSkipped) for event in trial.events):
            for event in trial.events:
                d.emit(event)
            continue
        d.emit(ProposalRecorded(proposal=f"{command.prefix}-{index + 1}", operation=to_jsonable(op),
                                base=_aimed_at(d.state, op), request=command.request, held=command.held))


def proposal_conflict(state: PlaybookState, proposal: str) -> str | None:
    """Why pending `proposal` can no longer be applied as proposed (an entry it aims at changed), or None."""
    pending = state.proposals[proposal]
    for name, text in pending.base.items():
        kp = state.get(name)
        if kp is None:
            return f"{name} was removed after this was proposed"
        if kp.text != text:
            return f"{name} was changed after this was proposed (now {kp.text[:60]!r})"
    return None


def _accept_proposal(d: _Decision, command: AcceptProposal) -> None:
    pending = d.state.proposals.get(command.proposal)
    if pending is None:
        return  # decided meanwhile: the caller reports it
    if (conflict := proposal_conflict(d.state, command.proposal)) is not None:
        d.emit(ProposalRejected(proposal=command.proposal, reason=conflict, by="check"))
        return
    edited = to_jsonable(command.edited) if command.edited is not None else None
    d.emit(ProposalAccepted(proposal=command.proposal, edited=edited))
    _operation(d, 0, edited if edited is not None else pending.operation)


def _reject_proposal(d: _Decision, command: RejectProposal) -> None:
    if command.proposal in d.state.proposals:
        d.emit(ProposalRejected(proposal=command.proposal, reason=command.reason, by="user"))


def _days_between(earlier: str, later: str) -> float | None:
    try:
        return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds() / 86400
    except (ValueError, TypeError):
        return None


def _expire_proposals(d: _Decision, command: ExpireProposals) -> None:
    for pending in list(d.state.proposals.values()):
        age = _days_between(pending.recorded_at, command.now)
        if age is not None and age > command.max_age_days:
            d.emit(ProposalExpired(proposal=pending.proposal, age_days=round(age, 3),
                                   max_age_days=command.max_age_days))


def _record_model_calls(d: _Decision, command: RecordModelCalls) -> None:
    for call in command.calls:
        d.emit(ModelCallRecorded(**msgspec.structs.asdict(call)))


def _defer_learning(d: _Decision, command: DeferLearning) -> None:
    if command.request in d.state.pending:
        d.emit(LearningDeferred(request=command.request, reason=command.reason, transcript=command.transcript,
                                used_tokens=command.used_tokens, budget_tokens=command.budget_tokens))


_HANDLERS: dict[type, Callable[[_Decision, Any], None]] = {
    ApplyOperations: _apply_operations,
    AddNewKeyPoints: _add_new_key_points,
    Evaluate: _evaluate,
    Prune: _prune,
    ImportLegacy: _import_legacy,
    RecordUnreadableFile: _record_unreadable,
    ReplaceContent: _replace_content,
    RequestLearning: _request_learning,
    CompleteLearning: _complete_learning,
    FailLearning: _fail_learning,
    SkipLearning: _skip_learning,
    SweepStale: _sweep_stale,
    MergeDuplicates: _merge_duplicates,
    HoldCuration: _hold_curation,
    SwitchPlaybook: _switch_playbook,
    ProposeOperations: _propose_operations,
    AcceptProposal: _accept_proposal,
    RejectProposal: _reject_proposal,
    ExpireProposals: _expire_proposals,
    RecordModelCalls: _record_model_calls,
    DeferLearning: _defer_learning,
}
