"""The records of the log: one frozen msgspec Struct per line, tagged by `type`.

Tags are pinned and never renamed: a new shape is a new tag. Every record carries
the envelope `seq` (gap-free position in the log), `tx` (its transaction) and `at`
(UTC, ISO 8601); the store stamps these when it appends. A transaction is its
events followed by one `TransactionCommitted` record, which carries the cause
(which hook or command, which Claude Code session, which model, and why).

This module holds the playbook's own events and re-exports the others: the envelope,
`TransactionCommitted` and the helpers every record shares (`eventlog.records`), and the
learning and review records (`eventlog.events_learning`). Import any of them from here.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

# Re-exported: the learning and review records, and the envelope, commit record and helpers of every record.
from .events_learning import (LearningRequested as LearningRequested, LearningCompleted as LearningCompleted,
    LearningFailed as LearningFailed, LearningGivenUp as LearningGivenUp, PlaybookDisabled as PlaybookDisabled,
    PlaybookEnabled as PlaybookEnabled, LearningSkipped as LearningSkipped, ModelCallRecorded as ModelCallRecorded,
    LearningDeferred as LearningDeferred, ProposalRecorded as ProposalRecorded, ProposalAccepted as ProposalAccepted,
    ProposalRejected as ProposalRejected, ProposalExpired as ProposalExpired, SectionValue as SectionValue,
    ValueMeasured as ValueMeasured)
from .records import (Cause as Cause, Event as Event, Record as Record, RecordType as RecordType,
    TransactionCommitted as TransactionCommitted, UnknownRecord as UnknownRecord, encodable_json as encodable_json,
    encodable_record as encodable_record, encoder as encoder, record_view as record_view)


class PlaybookImported(Event, frozen=True, kw_only=True, tag="PlaybookImported"):
    """A playbook.json written without a log (older tool, or by hand) was taken in.

    file_format: flat | sections | dual_key | empty | unreadable | unrecognized.
    With `genesis`, the playbook's `last_updated` becomes the file's own value.
    """

    path: str
    file_format: str
    version: str
    last_updated: str | None = None
    genesis: bool = True
    entries: int = 0
    ignored_key_points: int = 0
    moved_aside: str | None = None
    error: str | None = None


class KeyPointImported(Event, frozen=True, kw_only=True, tag="KeyPointImported"):
    """One entry of an imported file, after the migration rules.

    source_format: bare_string | dict_without_score | dict_with_score | dict_with_counters.
    `original_name` / `original_section` say what the file had when it was changed.
    """

    section: str
    name: str
    text: str
    helpful: int
    harmful: int
    source_format: str
    original_name: str | None = None
    original_section: str | None = None
    score: float | None = None
    cut_from: int | None = None
    """The length of the text in the file, when it was longer than MAX_TEXT_LENGTH and was cut."""


class KeyPointAdded(Event, frozen=True, kw_only=True, tag="KeyPointAdded"):
    """origin: operation | new_key_point | save | save_playbook | manual_edit | revert | user (`playbook add`) | recovery
    (`values.Origin`)."""

    section: str
    name: str
    text: str
    helpful: int
    harmful: int
    origin: str
    requested_section: str | None = None
    proposed_name: str | None = None
    cut_from: int | None = None
    """The length of the text as given, when it was longer than MAX_TEXT_LENGTH and was cut."""


class KeyPointUpdated(Event, frozen=True, kw_only=True, tag="KeyPointUpdated"):
    name: str
    text: str
    previous_text: str
    cut_from: int | None = None


class KeyPointsMerged(Event, frozen=True, kw_only=True, tag="KeyPointsMerged"):
    """`sources` were removed and `name` created from them with summed counters."""

    section: str
    name: str
    text: str
    sources: list[str]
    helpful: int
    harmful: int
    missing_sources: list[str] = []
    cut_from: int | None = None
    similarity: float | None = None
    """For a merge of near-duplicates found by the playbook itself: how alike they were, and by what `method`."""
    method: str | None = None


class KeyPointAbsorbed(Event, frozen=True, kw_only=True, tag="KeyPointAbsorbed"):
    """An ADD whose text was a near-duplicate of key point `name` was absorbed into it instead of becoming a key
    point of its own: `name` keeps its id, text, counters and history, so citations and ratings of it still land.

    `absorbed` is the text the ADD gave (cut, when it was longer than MAX_TEXT_LENGTH: `cut_from`),
    `similarity` how alike it was to `text`, the text of `name` it was absorbed into, by `method`.
    origin: as `KeyPointAdded.origin`.
    """

    name: str
    text: str
    absorbed: str
    similarity: float
    method: str
    origin: str = "operation"
    cut_from: int | None = None


class KeyPointDeleted(Event, frozen=True, kw_only=True, tag="KeyPointDeleted"):
    section: str
    name: str
    text: str
    reason: str = ""


class KeyPointEvaluated(Event, frozen=True, kw_only=True, tag="KeyPointEvaluated"):
    """rating: helpful | harmful | neutral. Counters are the values after this rating."""

    name: str
    rating: str
    helpful: int
    harmful: int
    rationale: str | None = None


class KeyPointPruned(Event, frozen=True, kw_only=True, tag="KeyPointPruned"):
    section: str
    name: str
    text: str
    helpful: int
    harmful: int
    rule: str


class KeyPointMoved(Event, frozen=True, kw_only=True, tag="KeyPointMoved"):
    name: str
    from_section: str
    to_section: str


class CountersSet(Event, frozen=True, kw_only=True, tag="CountersSet"):
    """Counters changed by a save or an edit rather than by a rating."""

    name: str
    helpful: int
    harmful: int
    previous_helpful: int
    previous_harmful: int


class SectionReordered(Event, frozen=True, kw_only=True, tag="SectionReordered"):
    section: str
    names: list[str]


class VersionSet(Event, frozen=True, kw_only=True, tag="VersionSet"):
    version: str
    previous: str


class KeyPointMarkedStale(Event, frozen=True, kw_only=True, tag="KeyPointMarkedStale"):
    """Neither rated nor cited in `idle_sessions` learned sessions: injected last until it is used again."""

    name: str
    idle_sessions: int


class CurationHeld(Event, frozen=True, kw_only=True, tag="CurationHeld"):
    """A curator reply not applied because it would collapse the playbook: `operations` as given, and why."""

    reason: str
    operations: Any = None
    entries: int = 0
    removed: int = 0
    chars_before: int = 0
    chars_after: int = 0


class OperationSkipped(Event, frozen=True, kw_only=True, tag="OperationSkipped"):
    """A request that was not applied, and why, so nothing disappears silently.

    kind: operation | new_key_point | evaluation | import | change.
    reason: see `eventlog.decide.SkipReason`.
    """

    kind: str
    reason: str
    detail: str = ""
    index: int | None = None
    operation: Any = None


class TailRepaired(Event, frozen=True, kw_only=True, tag="TailRepaired"):
    """A writer cut bytes of an unfinished transaction off the log and kept them in `kept_at`."""

    offset: int
    bytes_cut: int
    kept_at: str


class HistoryRewritten(Event, frozen=True, kw_only=True, tag="HistoryRewritten"):
    """Lines of the log were rewritten in place (a purge): their text redacted, the chain re-stamped from the first.

    `seqs` are the rewritten lines' seqs (each line keeps its seq), `reason` says why
    (`secrets`: the detector found them; `match`: a text the user named, never quoted),
    `head_before` and `head_after` are the chain's value at the log's end before the rewrite
    and after it (just before this record's transaction)."""

    seqs: list[int]
    reason: Literal["secrets", "match"]
    redactions: int
    head_before: str
    head_after: str
    kept_original: str | None = None


class SnapshotSetAside(Event, frozen=True, kw_only=True, tag="SnapshotSetAside"):
    """playbook.json was moved to `moved_to` and rebuilt from the log, because it could not be read
    (`kind` unreadable) or reflected a position the log does not hold: past its end (`ahead`, the log
    was cut) or inside it (`beside`, another history): `values.SetAsideKind`. `error` says where it stood."""

    moved_to: str
    error: str
    kind: str = "unreadable"


class BranchesMerged(Event, frozen=True, kw_only=True, tag="BranchesMerged"):
    """Two logs that share an ancestor were merged.

    `heads` are the last transactions of the two sides (sorted, so both sides record the same),
    `ancestor` the last transaction of their common ancestor ("" for none). Every transaction
    after seq `shared_seq` came from one side or both, and was appended again in (time,
    transaction id) order with new sequence numbers and hashes; `appended` counts them.
    `reverted` lists transactions undone because one side had dropped them (a `git revert`).
    """

    heads: list[str]
    ancestor: str = ""
    shared_seq: int = 0
    appended: int = 0
    reverted: list[str] = []


class MergeConflictResolved(Event, frozen=True, kw_only=True, tag="MergeConflictResolved"):
    """Both sides of a merge changed key point `name`; `rule` decided, and the losing version is kept here.

    conflict: update/update | update/delete | update/merge | delete/merge | merge/merge.
    `kept_tx` made the change that stands, `lost_tx` the one that does not; `lost_text` is the
    text the loser wanted (or had), so it can be restored by hand.
    """

    name: str
    conflict: str
    rule: str
    kept_tx: str
    lost_tx: str
    lost_text: str | None = None


AnyEvent: TypeAlias = (
    PlaybookImported | KeyPointImported | KeyPointAdded | KeyPointUpdated | KeyPointsMerged | KeyPointDeleted
    | KeyPointEvaluated | KeyPointPruned | KeyPointMoved | CountersSet | SectionReordered | VersionSet
    | OperationSkipped | TailRepaired | SnapshotSetAside | HistoryRewritten | LearningRequested | LearningCompleted
    | LearningFailed | LearningGivenUp | PlaybookDisabled | PlaybookEnabled | LearningSkipped | KeyPointMarkedStale
    | CurationHeld | ModelCallRecorded | LearningDeferred | BranchesMerged | MergeConflictResolved | ProposalRecorded
    | KeyPointAbsorbed | ValueMeasured
    | ProposalAccepted | ProposalRejected | ProposalExpired
)
"""Every event type, written out: a `match` over it that ends in `assert_never` is checked by mypy to handle
each one, so a new type is a decision at each such table, never a silent pass-through. A test holds it to the
registry's list."""
