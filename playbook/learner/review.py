"""Review before it counts: the proposals learning records when `playbook_review` is on, and their fate.

Accepting proposals appends, in one transaction, a `ProposalAccepted` for each followed by
exactly the events a direct learning cycle would have produced for its operation (an ADD of a
near-duplicate absorbed into the key point it repeats), then the prune rule. They pass the same
collapse guard as a direct cycle: what it holds is recorded (`CurationHeld`) and the proposals
stay pending. A proposal whose target entry changed since it was proposed is refused and the
refusal recorded with its reason.
`--accept-all` accepts each learning cycle's proposals together, as that cycle would have
applied them. Proposals older than `playbook_review_expiry_days` are expired (recorded)
whenever they are read or decided here, and by every learning cycle.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from eventlog.decide import AcceptProposal, Command, Evaluate, ExpireProposals, ProposeOperations, Prune
from eventlog.decide import RejectProposal, decide, decide_all
from eventlog.decide import proposal_conflict
from eventlog.decide_operations import sparing
from eventlog.domain import PendingProposal, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Cause, CurationHeld, Event, ProposalAccepted, ProposalRejected
from eventlog.evolve import fold
from eventlog.storage import utc_now
from projections.repository import PlaybookRepository

from playbook.wiring.settings import lean_settings, load_settings

from .lean import absorbing, guarded

Outcome = Literal["accepted", "refused", "held", "rejected"]


class ReviewError(PlaybookError):
    """A proposal that is not pending (unknown, or decided already), or an edit that does not fit it."""


class Proposal(msgspec.Struct, frozen=True):
    """A pending proposal as `playbook review` shows it."""

    id: str
    operation: Any
    recorded_at: str
    tx: str
    base: dict[str, str]
    """The text, when it was proposed, of each entry it aims at."""
    conflict: str | None = None
    """Why accepting it now would be refused, if it would."""
    held: str | None = None
    """Why the collapse guard would have held the reply it came from."""


class Decision(msgspec.Struct, frozen=True):
    """What one review action did to one proposal: accepted | refused | held | rejected, with the events
    appended (the whole transaction's)."""

    id: str
    outcome: Outcome
    reason: str = ""
    tx: str | None = None
    events: list[Event] = []


def cycle_commands(evaluations: Any, operations: Any, *, prefix: str, request: str | None, held: str | None,
                   now: str, max_age_days: float) -> list[Command]:
    """A learning cycle's commands with review on: the ratings and the prune they lead to apply, the curator's
    operations become proposals (`held`: why the guard would have held them), and old proposals expire."""
    return [
        Evaluate(evaluations), Prune(),
        ProposeOperations(operations=operations, prefix=prefix, request=request, held=held),
        ExpireProposals(now=now, max_age_days=max_age_days),
    ]


def expire(repo: PlaybookRepository) -> int:
    """Record the expiry of every proposal past the configured age; how many expired."""
    if not repo.state().proposals:
        return 0
    days = load_settings(repo.claude_dir.parent).playbook_review_expiry_days
    command = ExpireProposals(now=utc_now(), max_age_days=days)
    committed = repo.append([command], Cause(source="review", note="expired unreviewed proposals"))
    return 0 if committed is None else len(committed.events)


def _shown(state: PlaybookState, pending: PendingProposal) -> Proposal:
    return Proposal(id=pending.proposal, operation=pending.operation, recorded_at=pending.recorded_at,
                    tx=pending.tx, base=dict(pending.base), conflict=proposal_conflict(state, pending.proposal),
                    held=pending.held)


def pending(repo: PlaybookRepository) -> list[Proposal]:
    """The proposals waiting for review, oldest first (those past the age limit are expired first)."""
    expire(repo)
    state = repo.state()
    return [_shown(state, p) for p in state.proposals.values()]


def _cause(repo: PlaybookRepository, proposal: PendingProposal, note: str) -> Cause:
    """The cause of a decision: the session and model of the cycle that proposed it, so `log --session`
    and `revert SESSION` find what a session taught, reviewed or not."""
    session = model = None
    if proposal.tx:
        from projections.timeline import Timeline, TimelineError

        try:
            commit = Timeline(repo).transaction(proposal.tx).commit
            session, model = commit.session, commit.model
        except TimelineError:
            pass
    return Cause(source="review", session=session, model=model, note=note)


def _find(repo: PlaybookRepository, proposal: str) -> PendingProposal:
    expire(repo)
    found = repo.state().proposals.get(proposal)
    if found is None:
        raise ReviewError(f"no pending proposal {proposal!r} (see `playbook review`)")
    return found


def operation_text(operation: Any) -> str | None:
    """The text an edit replaces: ADD and UPDATE's `text`, MERGE's `merged_text`; None for the others."""
    if not isinstance(operation, dict):
        return None
    text = operation.get("merged_text" if operation.get("type") == "MERGE" else "text")
    return text if isinstance(text, str) else None


def _scrubbed(text: str) -> str:
    """What the user typed, with any secret in it redacted: it goes into the log like a model's reply."""
    from projections.scrub import scrub  # detect-secrets: imported when a text is typed, not for a listing

    return scrub(text)


def edited_operation(operation: Any, text: str) -> dict[str, Any]:
    """`operation` with its text replaced by `text` (ADD and UPDATE: text; MERGE: merged_text)."""
    if not isinstance(operation, dict) or operation.get("type") not in ("ADD", "UPDATE", "MERGE"):
        raise ReviewError("only an ADD, UPDATE or MERGE proposal has a text to edit")
    if not text.strip():
        raise ReviewError("the edited text is empty")
    key = "merged_text" if operation["type"] == "MERGE" else "text"
    return {**operation, key: text}


def _accept(repo: PlaybookRepository, wanted: list[tuple[PendingProposal, dict[str, Any] | None]], cause: Cause) -> list[Decision]:
    """Accept `wanted` (proposal, edited operation or None) together, as one direct cycle's reply."""
    settings = lean_settings(repo.claude_dir.parent)

    def accepted(events: list[Event]) -> list[Any]:
        return [edited if edited is not None else p.operation for p, edited in wanted
                if any(isinstance(e, ProposalAccepted) and e.proposal == p.proposal for e in events)]

    def decider(fresh: PlaybookState) -> list[Event]:
        # The accepted operations together are the reply a direct cycle would have applied: none of them adds
        # into an entry another of them changes. Which are accepted is known only once they are decided, and a
        # refused one must not spare its target, so the sparing is decided again until it is the accepted ones'.
        operations = [edited if edited is not None else p.operation for p, edited in wanted]
        for _round in range(len(wanted) + 1):
            absorb = sparing(absorbing(settings), operations)
            accepting = decide_all(fresh, [AcceptProposal(proposal=p.proposal, edited=edited, absorb=absorb)
                                           for p, edited in wanted])
            if accepted(accepting) == operations:
                break
            operations = accepted(accepting)
        held = guarded(fresh, accepting, operations, settings)
        if held is not None:
            # Held as a direct cycle's reply would be; the refusals stand, the rest stay pending.
            refusals: list[Event] = [e for e in accepting if isinstance(e, ProposalRejected)]
            return refusals + decide(fold(refusals, fresh), held)
        return accepting + decide(fold(accepting, fresh), Prune())

    committed = repo.append(decider, cause)
    events = [] if committed is None else list(committed.events)
    tx = committed.commit.tx if committed is not None else None
    decisions = []
    holding = next((e for e in events if isinstance(e, CurationHeld)), None)
    for proposal, _edited in wanted:
        name = proposal.proposal
        if any(isinstance(e, ProposalAccepted) and e.proposal == name for e in events):
            decisions.append(Decision(id=name, outcome="accepted", tx=tx, events=events))
        elif (refusal := next((e for e in events if isinstance(e, ProposalRejected) and e.proposal == name),
                              None)) is not None:
            decisions.append(Decision(id=name, outcome="refused", reason=refusal.reason, tx=tx, events=events))
        elif holding is not None:
            decisions.append(Decision(id=name, outcome="held", reason=holding.reason, tx=tx, events=events))
        # else: decided meanwhile by someone else; not this call's to report
    return decisions


def accept(repo: PlaybookRepository, proposal: str, text: str | None = None) -> Decision:
    """Accept `proposal` (with its text replaced by `text`, when given); refused if its target changed,
    held (and left pending) if the collapse guard holds it."""
    found = _find(repo, proposal)
    edited = edited_operation(found.operation, _scrubbed(text)) if text is not None else None
    cause = _cause(repo, found, f"{'edit and accept' if edited is not None else 'accept'} proposal {proposal}")
    decided = _accept(repo, [(found, edited)], cause)
    if not decided:
        raise ReviewError(f"proposal {proposal!r} was decided meanwhile")
    return decided[0]


def accept_all(repo: PlaybookRepository) -> list[Decision]:
    """Accept every pending proposal, oldest first, each learning cycle's together in one transaction."""
    expire(repo)
    groups: dict[str, list[PendingProposal]] = {}
    for proposal in repo.state().proposals.values():
        groups.setdefault(proposal.tx or proposal.proposal, []).append(proposal)
    decisions: list[Decision] = []
    for group in groups.values():
        note = f"accept proposal{'s' if len(group) > 1 else ''} {', '.join(p.proposal for p in group)}"
        decisions += _accept(repo, [(p, None) for p in group], _cause(repo, group[0], note))
    return decisions


def reject(repo: PlaybookRepository, proposal: str, reason: str) -> Decision:
    """Reject `proposal` with the user's `reason`; recorded, and the playbook left as it is."""
    found = _find(repo, proposal)
    reason = _scrubbed(reason.strip()) or "rejected in review"
    cause = _cause(repo, found, f"reject proposal {proposal}")
    committed = repo.append([RejectProposal(proposal=proposal, reason=reason)], cause)
    if committed is None or not committed.events:
        raise ReviewError(f"proposal {proposal!r} was decided meanwhile")
    return Decision(id=proposal, outcome="rejected", reason=reason, tx=committed.commit.tx,
                    events=list(committed.events))
