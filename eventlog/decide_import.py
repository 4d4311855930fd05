"""Imports and whole-content changes decided: a legacy playbook.json, an unreadable file, a saved or hand-edited
playbook turned into the events that lead from the state to it."""

from __future__ import annotations

from typing import Any

import msgspec

from .commands import ImportLegacy, RecordUnreadableFile, ReplaceContent, SkipReason
from .decision import Decision
from .domain import MAX_TEXT_LENGTH, SECTION_SLUGS, KeyPoint, PlaybookState, next_name
from .events import CountersSet, Event, KeyPointAdded, KeyPointDeleted, KeyPointImported, KeyPointMoved
from .events import KeyPointUpdated, OperationSkipped, PlaybookImported, SectionReordered, VersionSet
from .evolve import apply, fold
from .legacy import NormalizedPlaybook, normalize_playbook
from .values import Origin


def cut(text: str) -> tuple[str, int | None]:
    """`text` cut to MAX_TEXT_LENGTH, and its length as given when it was cut: a file (a legacy playbook.json,
    a hand edit) holds texts of any size, and every hook and command would carry them."""
    return (text[:MAX_TEXT_LENGTH], len(text)) if len(text) > MAX_TEXT_LENGTH else (text, None)


def import_events(normalized: NormalizedPlaybook, path: str, genesis: bool, kept_at: str | None = None) -> list[Event]:
    events: list[Event] = [
        PlaybookImported(
            path=path, file_format=normalized.file_format, version=normalized.version,
            last_updated=normalized.last_updated, genesis=genesis, entries=len(normalized.entries),
            ignored_key_points=normalized.ignored_key_points, moved_aside=kept_at,
        )
    ]
    for entry in normalized.entries:
        text, cut_from = cut(entry.text)
        events.append(
            KeyPointImported(
                section=entry.section, name=entry.name, text=text, helpful=entry.helpful,
                harmful=entry.harmful, source_format=entry.source_format, original_name=entry.original_name,
                original_section=entry.original_section, score=entry.score, cut_from=cut_from,
            )
        )
    for rejected in normalized.rejected:
        events.append(OperationSkipped(kind="import", reason=rejected.reason, detail=rejected.detail, operation=rejected.item))
    return events


def import_legacy(d: Decision, command: ImportLegacy) -> None:
    normalized = normalize_playbook(command.data)
    present: list[OperationSkipped] = []
    if not command.genesis:
        # An entry whose text the playbook already holds is not imported again: importing the same
        # file twice would otherwise double every entry under new ids.
        held = {kp.text: kp.name for _, kp in d.state.entries()}
        kept = []
        for index, entry in enumerate(normalized.entries):
            if entry.text in held:
                present.append(OperationSkipped(
                    kind="import", reason=SkipReason.DUPLICATE_TEXT, index=index,
                    detail=f"already in the playbook as {held[entry.text]}",
                    operation={"name": entry.original_name or entry.name, "text": entry.text}))
            else:
                kept.append(entry)
        # Into a live log, an imported name must not collide with an existing one.
        normalized = _rename_for(d.state, msgspec.structs.replace(normalized, entries=kept))
    for event in import_events(normalized, command.path, command.genesis, command.kept_at):
        d.emit(event)
    for event in present:
        d.emit(event)


def _rename_for(state: PlaybookState, normalized: NormalizedPlaybook) -> NormalizedPlaybook:
    scratch = state.copy()
    entries = []
    for entry in normalized.entries:
        if scratch.get(entry.name) is not None:
            entry = msgspec.structs.replace(
                entry, name=next_name(scratch, entry.section), original_name=entry.original_name or entry.name
            )
        apply(scratch, KeyPointImported(section=entry.section, name=entry.name, text=entry.text, helpful=0,
                                        harmful=0, source_format=entry.source_format))
        entries.append(entry)
    return msgspec.structs.replace(normalized, entries=entries)


def record_unreadable(d: Decision, command: RecordUnreadableFile) -> None:
    d.emit(
        PlaybookImported(
            path=command.path, file_format="unreadable", version=d.state.version,
            last_updated=d.state.last_updated, genesis=True, moved_aside=command.moved_aside, error=command.error,
        )
    )


def content_state(data: Any) -> tuple[PlaybookState, NormalizedPlaybook]:
    """The state a playbook dict describes, read with the legacy rules."""
    normalized = normalize_playbook(data)
    state = fold(import_events(normalized, "", genesis=True))
    return state, normalized


def replace_content(d: Decision, command: ReplaceContent) -> None:
    target, normalized = content_state(command.target)
    for rejected in normalized.rejected:
        d.skip("change", rejected.reason, rejected.detail, None, rejected.item)
    base = command.base if command.base is not None else d.state.copy()
    origin = command.origin
    for section, kp in base.entries():
        if target.get(kp.name) is None and (current := d.state.get(kp.name)) is not None:
            d.emit(KeyPointDeleted(section=d.state.where[kp.name], name=kp.name, text=current.text,
                                   reason=f"removed by {origin}"))
    renamed: dict[str, str] = {}
    found_in = {entry.name: entry.original_section for entry in normalized.entries}
    for section, kp in target.entries():
        if base.get(kp.name) is None:
            renamed[kp.name] = _added(d, section, kp, origin, found_in.get(kp.name))
        else:
            _changed(d, base, section, kp)
    if target.version != base.version and target.version != d.state.version:
        d.emit(VersionSet(version=target.version, previous=d.state.version))
    _reorder(d, target, renamed)


def _added(d: Decision, section: str, kp: KeyPoint, origin: Origin, found_in: str | None) -> str:
    """An entry the target has and the base had not: added, under its name unless a concurrent writer took it
    meanwhile; returns the name it got."""
    name = kp.name if d.state.get(kp.name) is None else next_name(d.state, section)
    text, cut_from = cut(kp.text)
    d.emit(KeyPointAdded(section=section, name=name, text=text, helpful=kp.helpful, harmful=kp.harmful,
                         origin=origin, proposed_name=kp.name if name != kp.name else None,
                         requested_section=found_in, cut_from=cut_from))
    return name


def _changed(d: Decision, base: PlaybookState, section: str, kp: KeyPoint) -> None:
    """An entry both had: what changed from the base to the target, applied to the current state."""
    before = base.get(kp.name)
    assert before is not None
    current = d.state.get(kp.name)
    if current is None:
        d.skip("change", SkipReason.UNKNOWN_ID, f"{kp.name} was removed meanwhile; its change is not applied",
               None, {"name": kp.name, "text": kp.text})
        return
    text, cut_from = cut(kp.text)
    if kp.text != before.text and text != current.text:
        d.emit(KeyPointUpdated(name=kp.name, text=text, previous_text=current.text, cut_from=cut_from))
    helpful = max(current.helpful + kp.helpful - before.helpful, 0)
    harmful = max(current.harmful + kp.harmful - before.harmful, 0)
    if (helpful, harmful) != (current.helpful, current.harmful):
        d.emit(CountersSet(name=kp.name, helpful=helpful, harmful=harmful,
                           previous_helpful=current.helpful, previous_harmful=current.harmful))
    if section != base.where[kp.name] and d.state.where[kp.name] != section:
        d.emit(KeyPointMoved(name=kp.name, from_section=d.state.where[kp.name], to_section=section))


def _reorder(d: Decision, target: PlaybookState, renamed: dict[str, str]) -> None:
    """Each section's order as the target has it, the entries it does not name kept after."""
    for section in SECTION_SLUGS:
        present = d.state.sections[section]
        wanted = [renamed.get(name, name) for name in target.sections[section]]
        wanted = [name for name in wanted if name in present]
        wanted_set = set(wanted)
        if [name for name in present if name in wanted_set] != wanted:
            d.emit(SectionReordered(section=section, names=wanted + [n for n in present if n not in wanted_set]))
