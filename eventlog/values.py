"""The value sets of the log's fields, as `Literal` types for the code that writes them.

Event fields keep the plain `str` type on reading, so a value a newer version adds does
not make its line unreadable here; everything that constructs an event or a command is
checked against these sets by the type checker.
"""

from __future__ import annotations

from typing import Literal

Origin = Literal["operation", "new_key_point", "save", "save_playbook", "manual_edit", "revert", "user", "recovery"]
"""Why a key point was added (`KeyPointAdded.origin`), or what replaced the content (`ReplaceContent`)."""

SourceFormat = Literal["bare_string", "dict_without_score", "dict_with_score", "dict_with_counters"]
"""The shape an imported entry had in its file (`KeyPointImported.source_format`)."""

FileFormat = Literal["flat", "sections", "dual_key", "empty", "unreadable", "unrecognized"]
"""The shape of an imported playbook.json (`PlaybookImported.file_format`)."""

Rating = Literal["helpful", "harmful", "neutral"]
"""A reflector's tag (`KeyPointEvaluated.rating`)."""

SkipKind = Literal["operation", "new_key_point", "evaluation", "import", "change"]
"""What kind of request was skipped (`OperationSkipped.kind`)."""

SkipReasonName = Literal[
    "not_a_list", "not_an_object", "unknown_type", "empty_text", "invalid_text", "duplicate_text",
    "unchanged_text", "empty_target_id", "unknown_id", "too_few_sources", "empty_merged_text", "truncated",
    "unknown_rating", "invalid_counter", "ignored_key_points",
]
"""Why a request was not applied (`OperationSkipped.reason`; `eventlog.decide.SkipReason` names them)."""

NothingToLearn = Literal["only the playbook's own slash commands", "no user request in the session"]
"""Why a session was skipped before any model call (`LearningSkipped.reason`): every user turn of it is one of
the plugin's own commands (`/event-sourced-playbook:show`, `:why`, ...), or it holds no user turn at all."""

SetAsideKind = Literal["unreadable", "ahead", "beside"]
"""Why playbook.json was moved aside (`SnapshotSetAside.kind`): unreadable, or reflecting a log position
past the log's end (the log was cut) or one the log does not hold (another history)."""

HookName = Literal["SessionStart", "UserPromptSubmit", "SessionEnd", "PreCompact", "SubagentStop"]
"""The Claude Code hooks the playbook runs in (`LearningRequested.hook`)."""

Backend = Literal["api", "cli"]
"""How the learner reaches the model: `api` is the Messages API with a key, `cli` the Claude Code CLI
(`claude -p`) on the user's own login (`playbook.learner.backend`)."""

ModelRole = Literal["reflector", "curator", "extraction"]
"""Which of the learner's prompts a model call answered (`ModelCallRecorded.role`)."""

CallOutcome = Literal["ok", "error", "cancelled"]
"""How one attempt of a model call ended (`ModelCallRecorded.outcome`)."""
