"""Review decided: the curator's operations recorded as proposals, and each proposal accepted, rejected or expired."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .commands import AcceptProposal, ApplyOperations, ExpireProposals, ProposeOperations, RejectProposal
from .commands import SkipReason
from .decide_operations import MAX_OPERATIONS, aimed_at, apply_operations, operation
from .decision import Decision
from .domain import PlaybookState
from .events import OperationSkipped, ProposalAccepted, ProposalExpired, ProposalRecorded, ProposalRejected
from .legacy import to_jsonable


def _aimed_at(state: PlaybookState, op: Any) -> dict[str, str]:
    """The entries `op` changes, with their text now: what an accept re-checks."""
    return {name: kp.text for name in aimed_at(op) if isinstance(name, str) and (kp := state.get(name)) is not None}


def propose_operations(d: Decision, command: ProposeOperations) -> None:
    operations = command.operations
    if not isinstance(operations, list) or len(operations) > MAX_OPERATIONS:
        # Not a list, or too many: recorded exactly as a direct cycle records it, and what a direct
        # cycle would still apply (the first MAX_OPERATIONS) is proposed below.
        trial = Decision(d.state)
        apply_operations(trial, ApplyOperations(operations))
        for event in trial.events:
            if isinstance(event, OperationSkipped) and event.reason in (SkipReason.NOT_A_LIST, SkipReason.TRUNCATED):
                d.emit(event)
        if not isinstance(operations, list):
            return
    for index, op in enumerate(operations[:MAX_OPERATIONS]):
        trial = Decision(d.state)
        operation(trial, index, op)
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


def accept_proposal(d: Decision, command: AcceptProposal) -> None:
    pending = d.state.proposals.get(command.proposal)
    if pending is None:
        return  # decided meanwhile: the caller reports it
    if (conflict := proposal_conflict(d.state, command.proposal)) is not None:
        d.emit(ProposalRejected(proposal=command.proposal, reason=conflict, by="check"))
        return
    edited = to_jsonable(command.edited) if command.edited is not None else None
    d.emit(ProposalAccepted(proposal=command.proposal, edited=edited))
    operation(d, 0, edited if edited is not None else pending.operation, absorb=command.absorb)


def reject_proposal(d: Decision, command: RejectProposal) -> None:
    if command.proposal in d.state.proposals:
        d.emit(ProposalRejected(proposal=command.proposal, reason=command.reason, by="user"))


def _days_between(earlier: str, later: str) -> float | None:
    try:
        return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds() / 86400
    except (ValueError, TypeError):
        return None


def expire_proposals(d: Decision, command: ExpireProposals) -> None:
    for pending in list(d.state.proposals.values()):
        age = _days_between(pending.recorded_at, command.now)
        if age is not None and age > command.max_age_days:
            d.emit(ProposalExpired(proposal=pending.proposal, age_days=round(age, 3),
                                   max_age_days=command.max_age_days))
