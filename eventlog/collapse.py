"""A guard against context collapse: a curator reply that would wipe out much of the playbook at once.

Pure. The reply's operations are decided against a scratch state and the result
compared with the state before: how many key points would disappear (deleted or
merged away) and how much of the playbook's text would be lost. Over either limit,
the operations are held (`HoldCuration` -> `CurationHeld`), not applied.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .domain import PlaybookState

DEFAULT_MAX_REMOVED_SHARE = 0.3
"""Share of the key points a single reply may delete or merge away."""
DEFAULT_MAX_SHRINK_SHARE = 0.3
"""Share of the playbook's text a single reply may remove."""
MIN_REMOVED = 5
"""Fewer disappearing key points than this are never a collapse: tidying a small playbook is normal."""
MIN_SHRINK_CHARS = 500
"""Less text lost than this is never a collapse."""


class Limits(msgspec.Struct, frozen=True):
    max_removed_share: float = DEFAULT_MAX_REMOVED_SHARE
    max_shrink_share: float = DEFAULT_MAX_SHRINK_SHARE


class Loss(msgspec.Struct, frozen=True):
    """What a reply would take away: key points before and gone, characters of text before and after."""

    entries: int
    removed: int
    chars_before: int
    chars_after: int

    @property
    def removed_share(self) -> float:
        return self.removed / self.entries if self.entries else 0.0

    @property
    def shrink_share(self) -> float:
        lost = self.chars_before - self.chars_after
        return lost / self.chars_before if self.chars_before and lost > 0 else 0.0


def _chars(state: PlaybookState) -> int:
    return sum(len(kp.text) for _section, kp in state.entries())


def loss(before: PlaybookState, after: PlaybookState) -> Loss:
    removed = sum(1 for name in before.where if name not in after.where)
    return Loss(entries=len(before.where), removed=removed, chars_before=_chars(before), chars_after=_chars(after))


def collapse_reason(found: Loss, limits: Limits) -> str | None:
    """Why `found` is a collapse under `limits`, or None when it is not."""
    if found.removed >= MIN_REMOVED and found.removed_share > limits.max_removed_share:
        return (f"it would delete or merge away {found.removed} of {found.entries} key points "
                f"({found.removed_share:.0%}, more than {limits.max_removed_share:.0%})")
    lost = found.chars_before - found.chars_after
    if lost >= MIN_SHRINK_CHARS and found.shrink_share > limits.max_shrink_share:
        return (f"it would shrink the playbook's text from {found.chars_before} to {found.chars_after} characters "
                f"({found.shrink_share:.0%} less, more than {limits.max_shrink_share:.0%})")
    return None


class HoldCuration(msgspec.Struct, frozen=True, kw_only=True):
    """Record a curator reply that was not applied because it would collapse the playbook."""

    operations: Any
    reason: str
    loss: Loss
