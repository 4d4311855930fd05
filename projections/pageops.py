"""The history page's encoding of one event: its op (a short array), the sections it touches, its cause and label."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal, assert_never

from eventlog.domain import SECTION_SLUGS
from eventlog.events import (
    AnyEvent,
    BranchesMerged,
    CountersSet,
    CurationHeld,
    HistoryRewritten,
    KeyPointAbsorbed,
    KeyPointAdded,
    KeyPointDeleted,
    KeyPointEvaluated,
    KeyPointImported,
    KeyPointMarkedStale,
    KeyPointMoved,
    KeyPointPruned,
    KeyPointsMerged,
    KeyPointUpdated,
    LearningCompleted,
    LearningDeferred,
    LearningFailed,
    LearningGivenUp,
    LearningRequested,
    LearningSkipped,
    MergeConflictResolved,
    ModelCallRecorded,
    OperationSkipped,
    PlaybookDisabled,
    PlaybookEnabled,
    PlaybookImported,
    ProposalAccepted,
    ProposalExpired,
    ProposalRecorded,
    ProposalRejected,
    SectionReordered,
    SnapshotSetAside,
    TailRepaired,
    TransactionCommitted,
    UnknownRecord,
    ValueMeasured,
    VersionSet,
)
from eventlog.registry import SHORT_NAMES, tag_of

from .prices import cost_of

SECTIONS: tuple[str, ...] = tuple(SECTION_SLUGS)
_SECTION_INDEX = {name: index for index, name in enumerate(SECTIONS)}
SECTION_BIT = {name: 1 << index for index, name in enumerate(SECTIONS)}

Cause = Literal["learning", "hook", "manual", "revert", "import", "merge", "other"]
CAUSES: tuple[Cause, ...] = ("learning", "hook", "manual", "revert", "import", "merge", "other")

OP_KINDS = {
    "a": "added", "i": "imported", "u": "re-worded", "m": "merged", "d": "deleted", "p": "pruned",
    "e": "rated", "c": "counters set", "v": "moved", "r": "re-ordered", "b": "absorbed a near-duplicate",
    "x": "other",
}
"""What each op kind means; the page's renderer and fold read the same letters."""


def cause_of(commit: TransactionCommitted, learned: bool) -> Cause:
    """What kind of act a transaction was, from its commit's source (and whether a model was asked or a
    learning cycle completed in it: `learned`)."""
    return causes_of(commit.source)[bool(commit.model) or learned]


def causes_of(source: str) -> tuple[Cause, Cause]:
    """The cause of a transaction from `source`: when no model was asked and no learning cycle completed
    in it, and when one was."""
    if source.startswith("hook:") or source.startswith("learn"):
        return "hook", "learning"
    cause = _plain_cause(source)
    return cause, cause


def _plain_cause(source: str) -> Cause:
    if source.startswith("manual"):
        return "manual"
    if source.startswith("revert"):
        return "revert"
    if source.startswith("import") or source.startswith("bootstrap"):
        return "import"
    if source.startswith("merge"):
        return "merge"
    return "other"


def _section(name: str) -> int:
    return _SECTION_INDEX.get(name, len(SECTIONS) - 1)  # the fold files an unknown section under OTHERS


def op_of(event: AnyEvent | UnknownRecord, s: Callable[[str | None], int | None], where: dict[str, str]) -> tuple[list[Any], int]:
    """The op for one event, and the bit mask of the sections it touches (`where`: the placements
    just before it)."""

    def bit(name: str) -> int:
        section = where.get(name)
        return 0 if section is None else 1 << _section(section)

    match event:
        case KeyPointEvaluated():
            return (["e", s(event.name), s(event.rating), event.helpful, event.harmful, s(event.rationale)],
                    bit(event.name))
        case KeyPointAdded() | KeyPointImported():
            return (["a" if type(event) is KeyPointAdded else "i", s(event.name), _section(event.section),
                     s(event.text), event.helpful, event.harmful], 1 << _section(event.section))
        case KeyPointUpdated():
            return ["u", s(event.name), s(event.text), s(event.previous_text)], bit(event.name)
        case KeyPointsMerged():
            mask = 1 << _section(event.section)
            for source in event.sources:
                mask |= bit(source)
            return (["m", s(event.name), _section(event.section), s(event.text), event.helpful, event.harmful,
                     [s(source) for source in event.sources]], mask)
        case KeyPointAbsorbed():
            return ["b", s(event.name), s(event.absorbed), event.similarity], bit(event.name)
        case KeyPointDeleted():
            return ["d", s(event.name), s(event.reason or None), s(event.text)], bit(event.name)
        case KeyPointPruned():
            return ["p", s(event.name), s(event.rule), event.helpful, event.harmful], bit(event.name)
        case CountersSet():
            return ["c", s(event.name), event.helpful, event.harmful], bit(event.name)
        case KeyPointMoved():
            return ["v", s(event.name), _section(event.to_section)], bit(event.name) | 1 << _section(event.to_section)
        case SectionReordered():
            return ["r", _section(event.section), [s(name) for name in event.names]], 1 << _section(event.section)
        case (PlaybookImported() | VersionSet() | OperationSkipped() | TailRepaired() | SnapshotSetAside()
              | HistoryRewritten() | LearningRequested() | LearningCompleted() | LearningFailed() | LearningGivenUp()
              | PlaybookDisabled() | PlaybookEnabled() | LearningSkipped() | KeyPointMarkedStale() | CurationHeld()
              | ModelCallRecorded() | LearningDeferred() | BranchesMerged() | MergeConflictResolved()
              | ProposalRecorded() | ProposalAccepted() | ProposalRejected() | ProposalExpired() | ValueMeasured()
              | UnknownRecord()):
            # Recorded, not folded into the page's playbook: a line of the transaction's detail.
            return ["x", s(label(tag_of(event))), s(getattr(event, "name", None)), s(_detail(event))], 0
        case _:
            assert_never(event)


def label(tag: str) -> str:
    """How the page names an event type it does not fold: the CLI's short name (`OperationSkipped`
    -> `skipped`), or for a type this version does not know its tag as words."""
    short = SHORT_NAMES.get(tag)
    return short if short is not None else re.sub(r"(?<=[a-z])(?=[A-Z])", " ", tag).lower()


_DETAIL_FIELDS = ("reason", "detail", "error", "hook", "file_format", "path", "version", "kept_at", "moved_to")


def _detail(event: Any) -> str | None:
    """A short line for an event the page shows but does not fold: its telling fields."""
    if isinstance(event, ValueMeasured):
        return value_line(event)
    parts = []
    for field in _DETAIL_FIELDS:
        value = getattr(event, field, None)
        if value not in (None, ""):
            parts.append(f"{field}: {value}")
    return "; ".join(parts) or None


def value_line(e: ValueMeasured) -> str:
    """What a value measurement found, in one line: the suite's score with and without the plugin, and the
    learning benchmark's when it ran."""
    line = (f"with the playbook {e.with_score:.2f}, without {e.without_score:.2f} "
            f"(delta {e.with_score - e.without_score:+.2f}) over {e.cases} cases, ${e.cost_usd:.2f}"
            + (" (stopped at the cost ceiling)" if e.partial else ""))
    if e.lessons is not None:
        line += (f"; learning: {e.lessons_captured}/{e.lessons} lessons captured, {e.false_lessons} false, "
                 f"{e.duplicates} duplicates, {e.id_changes} id changes")
    return line


def value_of(event: Any) -> tuple[str, int, float, float, float] | None:
    """(at, cases, with, without, cost) of a value measurement's record; None for any other."""
    if not isinstance(event, ValueMeasured):
        return None
    return event.at, event.cases, event.with_score, event.without_score, event.cost_usd


def usage_of(event: Any) -> tuple[int, int, float] | None:
    """(input tokens, cache included; output tokens; cost in USD, 0 when unknown) of a model call's record."""
    if not isinstance(event, ModelCallRecorded):
        return None
    cost = cost_of(event)
    tokens_in = event.input_tokens + event.cache_creation_input_tokens + event.cache_read_input_tokens
    return tokens_in, event.output_tokens, cost if cost is not None else 0.0
