"""How the playbook at one point differs from another, and that difference applied to a state."""

from __future__ import annotations

import msgspec

from eventlog.domain import SECTION_SLUGS, KeyPoint, PlaybookState


class Change(msgspec.Struct, frozen=True):
    name: str
    section: str
    text: str
    helpful: int
    harmful: int
    before_section: str | None = None
    before_text: str | None = None
    before_helpful: int | None = None
    before_harmful: int | None = None


class Diff(msgspec.Struct, frozen=True):
    """How the playbook at `b` differs from the one at `a`."""

    added: list[Change]
    removed: list[Change]
    reworded: list[Change]
    moved: list[Change]
    counters: list[Change]
    order: dict[str, list[str]]
    version: tuple[str, str] | None = None

    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.reworded or self.moved or self.counters or self.version)


def diff(a: PlaybookState, b: PlaybookState) -> Diff:
    """Entries added, removed, re-worded, moved and re-counted from `a` to `b`, and `b`'s order."""
    added, removed, reworded, moved, counters = [], [], [], [], []
    for section, kp in b.entries():
        old = a.get(kp.name)
        change = Change(kp.name, section, kp.text, kp.helpful, kp.harmful)
        if old is None:
            added.append(change)
            continue
        old_section = a.where[kp.name]
        before = msgspec.structs.replace(change, before_section=old_section, before_text=old.text,
                                         before_helpful=old.helpful, before_harmful=old.harmful)
        if old.text != kp.text:
            reworded.append(before)
        if old_section != section:
            moved.append(before)
        if (old.helpful, old.harmful) != (kp.helpful, kp.harmful):
            counters.append(before)
    for section, kp in a.entries():
        if b.get(kp.name) is None:
            removed.append(Change(kp.name, section, kp.text, kp.helpful, kp.harmful))
    version = (a.version, b.version) if a.version != b.version else None
    unordered = Diff(added, removed, reworded, moved, counters, {}, version)
    # Order is recorded only where applying the changes alone would not give b's order.
    naive = apply_diff(a, unordered)
    order = {s: list(b.sections[s]) for s in SECTION_SLUGS if list(naive.sections[s]) != list(b.sections[s])}
    return msgspec.structs.replace(unordered, order=order)


def apply_diff(state: PlaybookState, change: Diff) -> PlaybookState:
    """`state` with `change` applied: `apply_diff(a, diff(a, b))` has `b`'s content.

    An entry changed in place keeps its position; an added or moved one goes to the end
    of its section; `order` then gives any section its recorded order."""
    result = state.copy()
    for item in change.removed:
        section = result.where.pop(item.name, None)
        if section is not None:
            result.sections[section].pop(item.name)
    for item in [*change.added, *change.reworded, *change.moved, *change.counters]:
        kp = KeyPoint(item.name, item.text, item.helpful, item.harmful)
        section = result.where.get(item.name)
        if section == item.section:
            result.sections[section][item.name] = kp  # in place: same position
            continue
        if section is not None:
            result.sections[section].pop(item.name)
        result.sections[item.section][item.name] = kp
        result.where[item.name] = item.section
    for section, names in change.order.items():
        entries = result.sections[section]
        result.sections[section] = {n: entries[n] for n in names if n in entries} | entries
    if change.version is not None:
        result.version = change.version[1]
    return result
