"""The records of learning and review: requests, outcomes, model calls, proposals (re-exported by `eventlog.events`).

Same rules as every record: frozen msgspec Structs, tags pinned and never renamed.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .records import Event


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


class SectionValue(msgspec.Struct, frozen=True, kw_only=True):
    """One section's cases in a value measurement: their mean score with the plugin and without it."""

    section: str
    cases: int
    with_score: float
    without_score: float


class ValueMeasured(Event, frozen=True, kw_only=True, tag="ValueMeasured"):
    """What `playbook eval` measured: the plugin's eval suite run with the plugin and without it (scores are
    means from 0 to 1, per case then over the cases), and the learning benchmark when it ran."""

    cases: int
    runs: int
    with_score: float
    without_score: float
    sections: list[SectionValue] = []
    cost_usd: float = 0.0
    partial: bool = False
    """The cost ceiling stopped the suite before every run was done: the scores are of the runs that were."""
    claude_version: str = ""
    model: str | None = None
    lessons: int | None = None
    """The learning benchmark's labelled lessons (None: the benchmark did not run)."""
    lessons_captured: int | None = None
    false_lessons: int | None = None
    duplicates: int | None = None
    id_changes: int | None = None
    learning_tokens: int | None = None
    learning_cost_usd: float | None = None
