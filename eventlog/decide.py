"""decide(state, command) -> events: every rule of the spec, reached from here and nowhere else.

Pure: no I/O, and `state` is never changed. Within one command, each request is
decided against the state left by the ones before it (REQ-CUR-005); a request
that is not applied becomes an `OperationSkipped` event saying why.

The rules live by kind of command: `decide_operations` (the curator's operations,
new key points, ratings, pruning), `decide_import` (imports and whole-content
changes), `decide_learning` (the learner's bookkeeping), `decide_review` (proposals
and their review). The commands themselves are `eventlog.commands`' (importable from
here too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import decide_import as imports
from . import decide_learning as learning
from . import decide_operations as ops
from . import decide_review as review
from .collapse import HoldCuration
from .commands import AddNewKeyPoints, ApplyOperations, Command, CompleteLearning, Evaluate, FailLearning
from .commands import ImportLegacy, MergeDuplicates, Prune, RecordUnreadableFile, ReplaceContent, RequestLearning
from .commands import AcceptProposal, ExpireProposals, ProposeOperations, RejectProposal, SkipLearning, SkipReason
from .commands import DeferLearning, RecordModelCalls, RecordValue, SweepStale, SwitchPlaybook
from .decide_import import content_state, import_events
from .decide_review import proposal_conflict
from .decision import Decision
from .domain import PlaybookState
from .events import Event

__all__ = [  # the commands, re-exported: callers import them with decide
    "AcceptProposal", "AddNewKeyPoints", "ApplyOperations", "Command", "CompleteLearning", "Evaluate",
    "ExpireProposals", "FailLearning", "HoldCuration", "ImportLegacy", "MergeDuplicates", "ProposeOperations",
    "Prune", "RecordUnreadableFile", "RejectProposal", "ReplaceContent", "RequestLearning", "SkipLearning",
    "SkipReason", "SweepStale", "SwitchPlaybook", "RecordModelCalls", "DeferLearning", "RecordValue", "content_state", "decide",
    "decide_all", "import_events", "proposal_conflict",
]


def decide(state: PlaybookState, command: Command) -> list[Event]:
    """The events that carry out `command` on `state`."""
    return decide_all(state, [command])


def decide_all(state: PlaybookState, commands: Sequence[Command], texts: set[str] | None = None) -> list[Event]:
    """The events of several commands in order, each decided after the ones before it. `texts`, when given,
    is every key point's text in `state`: the duplicate check then starts from it instead of gathering it."""
    decision = Decision(state, texts)
    for command in commands:
        _HANDLERS[type(command)](decision, command)
    return decision.events


_HANDLERS: dict[type, Callable[[Decision, Any], None]] = {
    ApplyOperations: ops.apply_operations,
    AddNewKeyPoints: ops.add_new_key_points,
    Evaluate: ops.evaluate,
    Prune: ops.prune,
    ImportLegacy: imports.import_legacy,
    RecordUnreadableFile: imports.record_unreadable,
    ReplaceContent: imports.replace_content,
    RequestLearning: learning.request_learning,
    CompleteLearning: learning.complete_learning,
    FailLearning: learning.fail_learning,
    SkipLearning: learning.skip_learning,
    SweepStale: learning.sweep_stale,
    MergeDuplicates: learning.merge_duplicates,
    HoldCuration: learning.hold_curation,
    SwitchPlaybook: learning.switch_playbook,
    ProposeOperations: review.propose_operations,
    AcceptProposal: review.accept_proposal,
    RejectProposal: review.reject_proposal,
    ExpireProposals: review.expire_proposals,
    RecordModelCalls: learning.record_model_calls,
    DeferLearning: learning.defer_learning,
    RecordValue: learning.record_value,
}
