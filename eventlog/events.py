"""The records of the log: one frozen msgspec Struct per line, tagged by `type`.

Tags are pinned and never renamed: a new shape is a new tag. Every record carries
the envelope `seq` (gap-free position in the log), `tx` (its transaction) and `at`
(UTC, ISO 8601); the store stamps these when it appends. A transaction is its
events followed by one `TransactionCommitted` record, which carries the cause
(which hook or command, which Claude Code session, which model, and why).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec


RecordType = TypeVar("RecordType", bound=msgspec.Struct)


class Record(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True, gc=False):
    """The envelope. Optional fields left at their default are omitted from the line."""

    seq: int = 0
    tx: str = ""
    at: str = ""


class Event(Record, frozen=True, kw_only=True):
    """A change to the playbook, or a request that was considered and not applied."""


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


class LearningRequested(Event, frozen=True, kw_only=True, tag="LearningRequested"):
    """A hook asked to learn from a transcript; pending until completed, failed or skipped."""

    request: str
    hook: str
    transcript: str
    session: str | None = None
    reason: str | None = None


class LearningCompleted(Event, frozen=True, kw_only=True, tag="LearningCompleted"):
    """A learning cycle ran; the transcript is learned up to `through_line` (exclusive)."""

    request: str
    transcript: str
    from_line: int
    through_line: int
    cited: list[str] = []
    injected: list[str] = []
    """The key points the session was given (the injection budget's choice when its learning ran)."""


class LearningFailed(Event, frozen=True, kw_only=True, tag="LearningFailed"):
    """A learning cycle could not finish (model unreachable, unusable reply, deadline); nothing was learned.

    With `attempt` (the how-manieth failure of the request), the request stays pending and is tried
    again later; a line without it (written before retries existed) closed the request.
    """

    request: str
    error: str
    transcript: str = ""
    attempt: int | None = None


class LearningGivenUp(Event, frozen=True, kw_only=True, tag="LearningGivenUp"):
    """A request that failed `attempts` times is closed without being learned; `error` is the last failure."""

    request: str
    attempts: int
    error: str
    transcript: str = ""


class PlaybookDisabled(Event, frozen=True, kw_only=True, tag="PlaybookDisabled"):
    """Injection and learning were turned off for this project (`playbook disable`)."""

    reason: str = ""


class PlaybookEnabled(Event, frozen=True, kw_only=True, tag="PlaybookEnabled"):
    """Injection and learning were turned back on for this project (`playbook enable`)."""

    reason: str = ""


class LearningSkipped(Event, frozen=True, kw_only=True, tag="LearningSkipped"):
    """A learning request that was not run (no API key, nothing new in the transcript, ...)."""

    request: str
    reason: str
    transcript: str = ""
    through_line: int | None = None


class ModelCallRecorded(Event, frozen=True, kw_only=True, tag="ModelCallRecorded"):
    """One attempt of one model call and what it used, failed attempts included.

    role: reflector | curator | extraction. backend: see `eventlog.values.Backend`.
    outcome: ok | error | cancelled (the cycle's deadline). Tokens are as the backend reported
    them (0 when it reported none); `cost_usd` only when the backend reported a cost itself.
    """

    role: str
    model: str
    backend: str
    attempt: int
    outcome: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    latency_ms: int = 0
    error: str | None = None
    cost_usd: float | None = None


class LearningDeferred(Event, frozen=True, kw_only=True, tag="LearningDeferred"):
    """A learning request skipped for now, not closed: it stays pending and runs when `reason` no longer holds
    (the daily token budget: the next UTC day, or at once when the budget is ignored)."""

    request: str
    reason: str
    transcript: str = ""
    used_tokens: int = 0
    budget_tokens: int = 0


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


class ProposalRecorded(Event, frozen=True, kw_only=True, tag="ProposalRecorded"):
    """With review on, a curator operation waiting for the user: it changes nothing until accepted.

    `base` is the text, when it was proposed, of each entry the operation aims at: an accept
    re-checks it and refuses a proposal whose target changed meanwhile.
    """

    proposal: str
    operation: Any
    base: dict[str, str] = {}
    request: str | None = None
    held: str | None = None
    """Why the collapse guard would have held the reply this came from, had review been off."""


class ProposalAccepted(Event, frozen=True, kw_only=True, tag="ProposalAccepted"):
    """A proposal accepted; the events that carry it out follow in the same transaction.

    `edited` is the operation as the user changed it before accepting, if they did.
    """

    proposal: str
    edited: Any = None


class ProposalRejected(Event, frozen=True, kw_only=True, tag="ProposalRejected"):
    """A proposal that will not be applied. by: user (with their reason) | check (its target changed)."""

    proposal: str
    reason: str
    by: str = "user"


class ProposalExpired(Event, frozen=True, kw_only=True, tag="ProposalExpired"):
    """A proposal left unreviewed longer than `max_age_days` (playbook_review_expiry_days)."""

    proposal: str
    age_days: float
    max_age_days: float


class TransactionCommitted(Record, frozen=True, kw_only=True, tag="TransactionCommitted"):
    """Closes a transaction of `events` records. Readers see a transaction only once this is written."""

    events: int
    source: str
    session: str | None = None
    model: str | None = None
    analysis: str | None = None
    reasoning: str | None = None
    note: str | None = None


class Cause(msgspec.Struct, frozen=True, kw_only=True):
    """Why a transaction happened: written on its commit record."""

    source: str
    session: str | None = None
    model: str | None = None
    analysis: str | None = None
    reasoning: str | None = None
    note: str | None = None


class UnknownRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A line of a type this version does not know (written by a newer one): kept, never applied."""

    seq: int
    tx: str
    type: str
    at: str = ""


def record_view(record_type: type[Record], fields: tuple[str, ...]) -> type[msgspec.Struct]:
    """A decode-only twin of `record_type` (same tag) that keeps just `fields` of a line.

    Decoding skips the other fields instead of building them, which is what makes the
    fold fast; types and defaults are the record's own.
    """
    kept: list[tuple[Any, ...]] = []
    for field in msgspec.structs.fields(record_type):
        if field.name not in fields:
            continue
        if field.default is not msgspec.NODEFAULT:
            kept.append((field.name, field.type, field.default))
        elif field.default_factory is not msgspec.NODEFAULT:
            kept.append((field.name, field.type, msgspec.field(default_factory=field.default_factory)))
        else:
            kept.append((field.name, field.type))
    unknown = set(fields) - {name for name, *_ in kept}
    if unknown:
        raise TypeError(f"{record_type.__name__} has no field {', '.join(sorted(unknown))}")
    config = record_type.__struct_config__
    return msgspec.defstruct(
        f"{record_type.__name__}View", kept, kw_only=True, frozen=True, gc=False,
        tag=config.tag, tag_field=config.tag_field, module=__name__,
    )


def encodable_json(value: Any) -> Any:
    """JSON data that can be written: every lone surrogate replaced by U+FFFD, and a number of more
    digits than Python writes out replaced by a note of its size."""
    if isinstance(value, str):
        # UTF-16 round trip: a surrogate pair becomes its character, a lone surrogate U+FFFD.
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, int) and value.bit_length() > 14_000:  # over 4,300 digits: Python will not write it
        return f"<a number of {int(value.bit_length() * 0.30103) + 1} digits>"
    if isinstance(value, dict):
        return {encodable_json(key): encodable_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [encodable_json(item) for item in value]
    return value


def encodable_record(record: RecordType) -> RecordType:
    """`record` made encodable (see `encodable_json`): lone surrogates, which UTF-8 cannot hold and a
    model's `\\ud83d` escape or a hand-written file can bring, become U+FFFD."""
    return msgspec.convert(encodable_json(msgspec.to_builtins(record)), type(record))


encoder = msgspec.json.Encoder()
