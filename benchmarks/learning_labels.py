"""What each recorded session of the learning benchmark should teach, and must not: the labels' types.

The labels live beside the transcripts (`benchmarks/transcripts/learning/labels.json`) and are read
with these types, so a label that names a lesson nobody defined, or a field nobody reads, is an
error at load rather than a silently lower score.

A lesson is recognised in a key point's text by `match`: every group must have one of its words
(case-insensitive, as substrings), and none of `unless` may appear. The scripted model adds a lesson
as its `text`, or as the session's own `wording` of it (a lesson repeated in other words).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

LABELS = Path(__file__).resolve().parent / "transcripts" / "learning" / "labels.json"

Kind = Literal["preference", "lesson", "repeat", "nothing", "commands"]
"""preference: the user only states a preference (short); lesson: a session that teaches something; repeat: a
session that teaches again, in other words, a lesson an earlier one taught; nothing: a session with nothing to
learn, which still costs a cycle; commands: only the plugin's own slash commands, skipped before any model call."""


class Lesson(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    key: str
    section: str
    text: str
    match: list[list[str]]
    unless: list[str] = []

    def found_in(self, text: str) -> bool:
        lowered = text.lower()
        return (all(any(word.lower() in lowered for word in group) for group in self.match)
                and not any(word.lower() in lowered for word in self.unless))


class Case(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    """The transcript is `NAME.jsonl` beside the labels."""
    kind: Kind
    prompts: list[str]
    """The user's prompts, in order, as the recorder sends them (`claude -p`, resumed after the first)."""
    teaches: list[str] = []
    """Keys of the lessons the session teaches."""
    must_not: list[str] = []
    """Keys of the false lessons a careless learner would take from it."""
    wording: dict[str, str] = {}
    """How the session puts a lesson it teaches, when not in the lesson's own words."""


class Labels(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    lessons: list[Lesson]
    false_lessons: list[Lesson]
    cases: list[Case]

    def lesson(self, key: str) -> Lesson:
        return next(lesson for lesson in [*self.lessons, *self.false_lessons] if lesson.key == key)


def load(path: Path = LABELS) -> Labels:
    """The labels, checked: every key a case names is defined, once, and each case's transcript is a name."""
    labels = msgspec.json.decode(path.read_bytes(), type=Labels)
    keys = [lesson.key for lesson in [*labels.lessons, *labels.false_lessons]]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: a lesson key is defined twice")
    good, bad = {lesson.key for lesson in labels.lessons}, {lesson.key for lesson in labels.false_lessons}
    names = [case.name for case in labels.cases]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a case name is used twice")
    for case in labels.cases:
        if not set(case.teaches) <= good or not set(case.must_not) <= bad or not set(case.wording) <= set(case.teaches):
            raise ValueError(f"{path}: case {case.name} names a lesson that is not defined")
        if case.kind in ("nothing", "commands") and case.teaches:
            raise ValueError(f"{path}: case {case.name} is of kind {case.kind} but teaches something")
    return labels
