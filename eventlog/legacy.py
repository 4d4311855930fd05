"""Reading any playbook shape the spec describes into canonical entries (pure, no I/O).

Covers REQ-SECT-006/007 and REQ-SCORE-004/005/006: flat `key_points`, bare strings,
`score`, dual-key files, missing or unknown sections. Used by the legacy import and
by `save_playbook`, so a dict is read the same way whichever door it comes in by.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

import msgspec

from .values import FileFormat, SkipReasonName, SourceFormat

from .domain import DEFAULT_VERSION, MAX_COUNTER, OTHERS, resolve_section_detail


class NormalizedEntry(msgspec.Struct, frozen=True, kw_only=True):
    section: str
    name: str
    text: str
    helpful: int
    harmful: int
    source_format: SourceFormat
    original_name: str | None = None
    original_section: str | None = None
    score: float | None = None


class Rejected(msgspec.Struct, frozen=True, kw_only=True):
    """An item of the file that could not become an entry, with why and what it was."""

    reason: SkipReasonName
    detail: str
    item: Any = None


class NormalizedPlaybook(msgspec.Struct, frozen=True, kw_only=True):
    file_format: FileFormat
    version: str
    last_updated: str | None
    entries: list[NormalizedEntry]
    rejected: list[Rejected]
    ignored_key_points: int = 0


def to_jsonable(value: Any) -> Any:
    """`value` as plain JSON data, whatever it holds (unknown objects become their repr)."""
    try:
        return msgspec.to_builtins(value, str_keys=True, enc_hook=repr)
    except (TypeError, ValueError, RecursionError, OverflowError):
        pass
    try:
        return repr(value)[:1000]
    except (RecursionError, ValueError):  # repr gives up on what to_builtins gave up on (nested too deep)
        return f"<{type(value).__name__} nested too deeply to show>"


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return min(max(int(value), 0), MAX_COUNTER)


def _bad_counter(value: Any) -> str | None:
    """Why a counter value as found is not taken as it is (None when it is a non-negative whole number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{type(value).__name__} {to_jsonable(value)!r}"[:200] + ", taken as 0"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r}, taken as 0"
    if value > MAX_COUNTER:
        return f"{_magnitude(value)} is larger than {MAX_COUNTER}, taken as {MAX_COUNTER}"
    if value < 0:
        return f"{_magnitude(value)} is negative, taken as 0"
    if isinstance(value, float) and not value.is_integer():
        return f"{value!r} is not a whole number, taken as {int(value)}"
    return None


def _magnitude(value: int | float) -> str:
    """A number as it can be shown: Python will not write out an int of more than 4,300 digits."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"a number of {int(value.bit_length() * math.log10(2)) + 1} digits"
    return repr(value)


def _is_number(value: Any) -> TypeGuard[int | float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)  # isfinite overflows on a huge int


class _Draft(msgspec.Struct, kw_only=True):
    section: str
    name: str | None
    text: str
    helpful: int
    harmful: int
    source_format: SourceFormat
    original_name: str | None
    original_section: str | None
    score: float | None


def _draft(item: Any, section: str, original_section: str | None, rejected: list[Rejected]) -> _Draft | None:
    if isinstance(item, str):
        if not item.strip():
            rejected.append(Rejected(reason="empty_text", detail="empty bare string entry", item=item))
            return None
        return _Draft(
            section=section, name=None, text=item, helpful=0, harmful=0, source_format="bare_string",
            original_name=None, original_section=original_section, score=None,
        )
    if not isinstance(item, dict):
        rejected.append(Rejected(reason="not_an_object", detail=f"entry of type {type(item).__name__}", item=to_jsonable(item)))
        return None
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        reason: SkipReasonName = "empty_text" if text is None or isinstance(text, str) else "invalid_text"
        rejected.append(Rejected(reason=reason, detail="entry without usable text", item=to_jsonable(item)))
        return None
    raw_name = item.get("name")
    name = raw_name if isinstance(raw_name, str) and raw_name.strip() else None
    score = item.get("score")
    helpful, harmful, source_format = _counters_of(item, name, score, rejected)
    return _Draft(
        section=section, name=name, text=text, helpful=helpful, harmful=harmful, source_format=source_format,
        original_name=None if name is not None or raw_name is None else str(to_jsonable(raw_name)),
        original_section=original_section,
        score=float(min(max(score, -MAX_COUNTER), MAX_COUNTER)) if _is_number(score) else None,
    )


def _counters_of(item: dict[str, Any], name: str | None, score: Any,
                 rejected: list[Rejected]) -> tuple[int, int, SourceFormat]:
    """An entry's counters and the shape they came in; a value that is not a count is recorded as rejected."""
    if "helpful" in item or "harmful" in item:
        # The entry is imported; a counter that is not a count (a string, negative, NaN) is recorded as
        # rejected, so the value it had in the file is not lost without a trace.
        for key in ("helpful", "harmful"):
            if key in item and (why := _bad_counter(item[key])) is not None:
                shown = name or "an entry without a name"
                rejected.append(Rejected(reason="invalid_counter", detail=f"{key} of {shown}: {why}",
                                         item=to_jsonable(item)))
        return _count(item.get("helpful")), _count(item.get("harmful")), "dict_with_counters"
    if _is_number(score):
        return _count(score), _count(-score), "dict_with_score"
    if score is not None:
        shown = name or "an entry without a name"
        rejected.append(Rejected(reason="invalid_counter", detail=f"score of {shown}: "
                                 f"{type(score).__name__} {to_jsonable(score)!r}"[:200] + ", ignored",
                                 item=to_jsonable(item)))
    return 0, 0, "dict_without_score"


def normalize_playbook(data: Any) -> NormalizedPlaybook:
    """Canonical entries for a playbook in any legacy or current shape; nothing is dropped unrecorded.

    Names: an entry keeps its name; a missing or repeated name becomes the smallest
    `kpt_NNN` that collides with no name anywhere in the file.
    """
    rejected: list[Rejected] = []
    if not isinstance(data, dict):
        return NormalizedPlaybook(
            file_format="unrecognized", version=DEFAULT_VERSION, last_updated=None, entries=[],
            rejected=[Rejected(reason="not_an_object", detail=f"top level is {type(data).__name__}", item=to_jsonable(data))],
        )
    version = data.get("version", DEFAULT_VERSION)
    version = version if isinstance(version, str) else (str(version) if _is_number(version) else DEFAULT_VERSION)
    last_updated = data.get("last_updated") if isinstance(data.get("last_updated"), str) else None
    sections = data.get("sections")
    key_points = data.get("key_points")
    drafts: list[_Draft] = []
    ignored = 0
    file_format: FileFormat
    if isinstance(sections, dict):
        file_format = "dual_key" if "key_points" in data else "sections"
        ignored = len(key_points) if isinstance(key_points, list) else int("key_points" in data)
        if "key_points" in data:  # sections win (REQ-SECT-007); what is ignored is recorded, not lost
            rejected.append(Rejected(reason="ignored_key_points",
                                     detail="key_points ignored: the file also has sections",
                                     item=to_jsonable(key_points)))
        drafts = _section_drafts(sections, rejected)
    elif isinstance(key_points, list):
        file_format = "flat"
        drafts = [draft for item in key_points if (draft := _draft(item, OTHERS, None, rejected)) is not None]
    else:
        file_format = "empty"
        if sections is not None or key_points is not None:
            rejected.append(Rejected(reason="not_a_list", detail="neither sections nor key_points is usable",
                                     item=to_jsonable({"sections": sections, "key_points": key_points})))
    return NormalizedPlaybook(
        file_format=file_format, version=version, last_updated=last_updated,
        entries=_assign_names(drafts), rejected=rejected, ignored_key_points=ignored,
    )


def _section_drafts(sections: dict[Any, Any], rejected: list[Rejected]) -> list[_Draft]:
    """The entries of a `sections` object, each under the section its name resolves to."""
    drafts: list[_Draft] = []
    for raw_section, items in sections.items():
        section, _unknown = resolve_section_detail(raw_section)
        original_section = None if raw_section == section else str(raw_section)
        if not isinstance(items, list):
            rejected.append(Rejected(reason="not_a_list", detail=f"section {raw_section!r} is not a list", item=to_jsonable(items)))
            continue
        for item in items:
            if (draft := _draft(item, section, original_section, rejected)) is not None:
                drafts.append(draft)
    return drafts


def _assign_names(drafts: list[_Draft]) -> list[NormalizedEntry]:
    taken = {d.name for d in drafts if d.name is not None}
    seen: set[str] = set()
    entries = []
    number = 0
    for draft in drafts:
        name, original_name = draft.name, draft.original_name
        if name is not None and name in seen:
            original_name, name = name, None
        if name is None:
            number += 1
            while f"kpt_{number:03d}" in taken:
                number += 1
            name = f"kpt_{number:03d}"
            taken.add(name)
        seen.add(name)
        entries.append(
            NormalizedEntry(
                section=draft.section, name=name, text=draft.text, helpful=draft.helpful, harmful=draft.harmful,
                source_format=draft.source_format, original_name=original_name,
                original_section=draft.original_section, score=draft.score,
            )
        )
    return entries

