"""The playbook's domain: sections, key points, the state folded from the log, and its rules."""

from __future__ import annotations

import re
from typing import Any

import msgspec

SECTION_SLUGS: dict[str, str] = {
    "PATTERNS & APPROACHES": "pat",
    "MISTAKES TO AVOID": "mis",
    "USER PREFERENCES": "pref",
    "PROJECT CONTEXT": "ctx",
    "OTHERS": "oth",
}
"""Canonical section name -> ID slug. Its order is the canonical section order."""

OTHERS = "OTHERS"
DEFAULT_VERSION = "1.0"
PRUNE_RULE = "harmful >= 3 and harmful > helpful"
MAX_TEXT_LENGTH = 2000
"""Longest key point text: a model's longer output is cut to this, and the cut is recorded."""
MAX_COUNTER = 2**53 - 1
"""Largest helpful / harmful count taken from a file: every JSON reader holds it exactly."""
MAX_ID_DIGITS = 18
"""A name's number counts towards the next ID only up to this many digits; a longer one is just a name
(Python refuses to convert numbers of more than 4,300 digits at all)."""

_LEGACY_NAME = re.compile(r"^kpt_(\d+)$")


class KeyPoint(msgspec.Struct, gc=False):
    """One key point. Mutable only inside the fold, which owns its copy of the state."""

    name: str
    text: str
    helpful: int = 0
    harmful: int = 0


class Usage(msgspec.Struct, array_like=True, gc=False):
    """What the log knows of a key point's use. `last_used` is the learned-session count when it was
    created, rated helpful or harmful, or cited; `stale` is set by a KeyPointMarkedStale until its next use."""

    injected: int = 0
    cited: int = 0
    last_used: int = 0
    stale: bool = False


class PendingLearning(msgspec.Struct, frozen=True, gc=False):
    """A learning request recorded by a hook and not yet finished."""

    request: str
    hook: str
    transcript: str
    session: str | None = None
    requested_at: str = ""
    attempts: int = 0
    """How many cycles for it failed so far."""
    failed_at: str = ""
    """When the last of them failed."""


class PendingProposal(msgspec.Struct, frozen=True, gc=False):
    """A proposal recorded with review on and not yet accepted, rejected or expired."""

    proposal: str
    operation: Any
    base: dict[str, str] = {}
    request: str | None = None
    recorded_at: str = ""
    tx: str = ""
    held: str | None = None


class PlaybookState(msgspec.Struct):
    """Everything the log says about the playbook at one position.

    `sections` maps each canonical section to its entries keyed by name, in order;
    `where` maps a name to its section; `high_water` holds, per slug, the highest
    number ever issued, so a retired ID is never handed out again.
    """

    version: str = DEFAULT_VERSION
    last_updated: str | None = None
    sections: dict[str, dict[str, KeyPoint]] = msgspec.field(
        default_factory=lambda: {name: {} for name in SECTION_SLUGS}
    )
    where: dict[str, str] = msgspec.field(default_factory=dict)
    high_water: dict[str, int] = msgspec.field(default_factory=lambda: dict.fromkeys(SECTION_SLUGS.values(), 0))
    seq: int = 0
    pending: dict[str, PendingLearning] = msgspec.field(default_factory=dict)
    """Learning requests not yet finished, by request id."""
    progress: dict[str, int] = msgspec.field(default_factory=dict)
    """Per transcript path, the line up to which learning has gone."""
    sessions: int = 0
    """Learning cycles completed: the clock that staleness is measured in."""
    usage: dict[str, Usage] = msgspec.field(default_factory=dict)
    """Per key point: sessions injected, citations, when last used, stale or not."""
    disabled: bool = False
    """Injection and learning are off for this project (`playbook disable`)."""
    proposals: dict[str, PendingProposal] = msgspec.field(default_factory=dict)
    """Proposals waiting for review, by id, in the order they were recorded."""

    def copy(self) -> PlaybookState:
        """A deep copy: the fold may mutate it without touching this one."""
        return PlaybookState(
            version=self.version,
            last_updated=self.last_updated,
            sections={
                section: {name: KeyPoint(kp.name, kp.text, kp.helpful, kp.harmful) for name, kp in entries.items()}
                for section, entries in self.sections.items()
            },
            where=dict(self.where),
            high_water=dict(self.high_water),
            seq=self.seq,
            pending=dict(self.pending),
            progress=dict(self.progress),
            sessions=self.sessions,
            usage={name: Usage(u.injected, u.cited, u.last_used, u.stale) for name, u in self.usage.items()},
            disabled=self.disabled,
            proposals=dict(self.proposals),
        )

    def get(self, name: str) -> KeyPoint | None:
        section = self.where.get(name)
        return None if section is None else self.sections[section][name]

    def entries(self) -> list[tuple[str, KeyPoint]]:
        """All (section, key point) pairs in canonical order."""
        return [(section, kp) for section, entries in self.sections.items() for kp in entries.values()]

    def texts(self) -> set[str]:
        return {kp.text for entries in self.sections.values() for kp in entries.values()}


def resolve_section(section_name: Any) -> str:
    """Canonical section for a name given by a model or a file: trimmed, case-insensitive, else OTHERS."""
    return resolve_section_detail(section_name)[0]


def resolve_section_detail(section_name: Any) -> tuple[str, bool]:
    """(canonical section, unknown) where `unknown` means a non-empty string that matched nothing."""
    if not isinstance(section_name, str) or not section_name.strip():
        return OTHERS, False
    wanted = section_name.strip().upper()
    for canonical in SECTION_SLUGS:
        if canonical.upper() == wanted:
            return canonical, False
    return OTHERS, True


def generate_keypoint_name(section_entries: list[dict[str, Any]], slug: str) -> str:
    """Next `{slug}-NNN` after the highest one among `section_entries`; other names are ignored."""
    pattern = re.compile(rf"^{re.escape(slug)}-(\d+)$")
    highest = 0
    for entry in section_entries:
        name = entry.get("name", "") if isinstance(entry, dict) else ""
        match = pattern.match(name) if isinstance(name, str) else None
        if match and len(match.group(1)) <= MAX_ID_DIGITS:
            highest = max(highest, int(match.group(1)))
    return f"{slug}-{highest + 1:03d}"


def legacy_number(name: str) -> int | None:
    match = _LEGACY_NAME.match(name)
    return int(match.group(1)) if match and len(match.group(1)) <= MAX_ID_DIGITS else None


def next_name(state: PlaybookState, section: str) -> str:
    """The ID the log issues next in `section`: past every ID it ever issued there.

    `high_water[slug]` is the highest number of every `slug-NNN` name the state ever
    held, in any section, so it is at least what `generate_keypoint_name` finds in the
    section: no scan per ADD. A name still in use is never handed out again, whatever
    state it is given.
    """
    slug = SECTION_SLUGS[section]
    number = state.high_water.get(slug, 0) + 1
    while (name := f"{slug}-{number:03d}") in state.where:
        number += 1
    return name


def should_prune(helpful: int, harmful: int) -> bool:
    """The pruning rule of the spec (REQ-SCORE-007): it never fires without three harmful ratings."""
    return harmful >= 3 and harmful > helpful
