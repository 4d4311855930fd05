"""The commands `decide` takes: what a caller asks of the playbook, before any rule is applied.

Each is a msgspec Struct holding the request as given (a model's operations, a user's
file, a hook's request); `eventlog.decide` turns it into events or skips.
"""

from __future__ import annotations

from typing import Any, Final, Union

import msgspec

from .collapse import HoldCuration
from .domain import PlaybookState
from .values import Backend, CallOutcome, ModelRole, Origin


class SkipReason:
    """Why a request was not applied (the `reason` of OperationSkipped)."""

    NOT_A_LIST: Final = "not_a_list"
    NOT_AN_OBJECT: Final = "not_an_object"
    UNKNOWN_TYPE: Final = "unknown_type"
    EMPTY_TEXT: Final = "empty_text"
    INVALID_TEXT: Final = "invalid_text"
    DUPLICATE_TEXT: Final = "duplicate_text"
    UNCHANGED_TEXT: Final = "unchanged_text"
    EMPTY_TARGET_ID: Final = "empty_target_id"
    UNKNOWN_ID: Final = "unknown_id"
    TOO_FEW_SOURCES: Final = "too_few_sources"
    EMPTY_MERGED_TEXT: Final = "empty_merged_text"
    TRUNCATED: Final = "truncated"
    UNKNOWN_RATING: Final = "unknown_rating"


class Absorb(msgspec.Struct, frozen=True):
    """Near-duplicates are absorbed: an ADD whose text is at least `threshold` alike (by similarity `method`) to a
    key point's becomes a `KeyPointAbsorbed` into the most alike one, which keeps its id, instead of a new key
    point. Never into the key points in `spare`, nor into one the same operations aim at (UPDATE, DELETE,
    MERGE): what the curator changes in that reply is not the place to fold another lesson into."""

    threshold: float
    method: str
    spare: frozenset[str] = frozenset()


class ApplyOperations(msgspec.Struct, frozen=True):
    """Curator operations (ADD / UPDATE / MERGE / DELETE), as the model gave them, or as the user typed them
    (`origin="user"`: `playbook add`)."""

    operations: Any
    origin: Origin = "operation"
    """The `origin` of the key points its ADDs create."""
    absorb: Absorb | None = None
    """Absorb near-duplicate ADDs (learning does; the spec's public functions and the user's `add` do not)."""


class AddNewKeyPoints(msgspec.Struct, frozen=True):
    """The older `new_key_points` list: each item is an ADD (REQ-SECT-005, REQ-CUR-008)."""

    new_key_points: Any


class Evaluate(msgspec.Struct, frozen=True):
    """Ratings of existing entries: `{"name", "rating", "rationale"?}` items."""

    evaluations: Any


class Prune(msgspec.Struct, frozen=True):
    """Remove every entry the pruning rule condemns."""


class ImportLegacy(msgspec.Struct, frozen=True):
    """Take in a playbook.json of any shape the spec describes."""

    data: Any
    path: str
    genesis: bool = True
    kept_at: str | None = None
    """Where the file's original bytes were kept, when the import replaces it."""


class RecordUnreadableFile(msgspec.Struct, frozen=True):
    """A playbook.json that was not JSON: it was kept at `moved_aside`, and nothing came from it."""

    path: str
    moved_aside: str | None
    error: str


class ReplaceContent(msgspec.Struct, frozen=True):
    """Make the playbook look like `target` (a playbook dict), as changed since `base`.

    Only what differs between `base` and `target` is applied, to the current state:
    so concurrent writers both land. Without `base`, the current state is the base
    and `target` wins outright. Names in `target` are kept; a new entry whose name a
    concurrent writer took meanwhile gets the next free ID of its section.
    """

    target: Any
    origin: Origin
    base: PlaybookState | None = None


class RequestLearning(msgspec.Struct, frozen=True, kw_only=True):
    """A hook asks for a learning cycle over `transcript` (run later, in the background)."""

    request: str
    hook: str
    transcript: str
    session: str | None = None
    reason: str | None = None


class CompleteLearning(msgspec.Struct, frozen=True, kw_only=True):
    """Close a pending request: the transcript is learned from `from_line` up to `through_line`."""

    request: str
    transcript: str
    from_line: int
    through_line: int
    cited: list[str] = []
    injected: list[str] = []


class SweepStale(msgspec.Struct, frozen=True, kw_only=True):
    """Mark key points unused (neither rated nor cited) for `stale_after` learned sessions as stale, and
    retire (DELETE, reason `stale`) those unused for `retire_after`; 0 turns either off."""

    stale_after: int
    retire_after: int


class MergeDuplicates(msgspec.Struct, frozen=True, kw_only=True):
    """Merge each pair (kept, duplicate, similarity) still present: the kept text survives, counters add up."""

    pairs: list[tuple[str, str, float]]
    method: str


class FailLearning(msgspec.Struct, frozen=True, kw_only=True):
    """A cycle failed: its request stays pending for a retry (`attempt` is the how-manieth failure),
    or, with `give_up`, is closed for good."""

    request: str
    error: str
    transcript: str = ""
    attempt: int | None = None
    give_up: bool = False


class SwitchPlaybook(msgspec.Struct, frozen=True, kw_only=True):
    """Turn injection and learning on or off for the project; nothing when it already is so."""

    enabled: bool
    reason: str = ""


class SkipLearning(msgspec.Struct, frozen=True, kw_only=True):
    request: str
    reason: str
    transcript: str = ""
    through_line: int | None = None


class ProposeOperations(msgspec.Struct, frozen=True, kw_only=True):
    """Curator operations as proposals for review (ids `<prefix>-1`, `<prefix>-2`, ...), changing nothing.

    An operation that a direct cycle would only skip is recorded as that skip, not proposed.
    `held` is why the collapse guard would have held the reply, had review been off.
    """

    operations: Any
    prefix: str
    request: str | None = None
    held: str | None = None


class AcceptProposal(msgspec.Struct, frozen=True, kw_only=True):
    """Carry out a pending proposal (as `edited`, when given) exactly as a direct cycle would have;
    refused (recorded) when an entry it aims at changed since it was proposed."""

    proposal: str
    edited: Any = None
    absorb: Absorb | None = None
    """As a direct cycle's `ApplyOperations.absorb`."""


class RejectProposal(msgspec.Struct, frozen=True, kw_only=True):
    proposal: str
    reason: str


class ExpireProposals(msgspec.Struct, frozen=True, kw_only=True):
    """Expire the proposals recorded more than `max_age_days` before `now` (ISO 8601, UTC)."""

    now: str
    max_age_days: float


class ModelCall(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt of a model call, as the learner measured it (see `ModelCallRecorded`)."""

    role: ModelRole
    model: str
    backend: Backend
    attempt: int
    outcome: CallOutcome
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    latency_ms: int = 0
    error: str | None = None
    cost_usd: float | None = None


class RecordModelCalls(msgspec.Struct, frozen=True):
    """Record what each model call of a cycle used, in the cycle's own transaction."""

    calls: list[ModelCall]


class DeferLearning(msgspec.Struct, frozen=True, kw_only=True):
    """Leave a pending request pending for now, recording why (the daily token budget is spent)."""

    request: str
    reason: str
    transcript: str = ""
    used_tokens: int = 0
    budget_tokens: int = 0


class RecordValue(msgspec.Struct, frozen=True):
    """Record what `playbook eval` measured (`ValueMeasured`'s fields)."""

    measured: dict[str, Any]


Command = Union[
    ApplyOperations, AddNewKeyPoints, Evaluate, Prune, ImportLegacy, RecordUnreadableFile, ReplaceContent,
    RequestLearning, CompleteLearning, FailLearning, SkipLearning, SweepStale, MergeDuplicates, HoldCuration,
    SwitchPlaybook, ProposeOperations, AcceptProposal, RejectProposal, ExpireProposals, RecordModelCalls,
    DeferLearning, RecordValue,
]
