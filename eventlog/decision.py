"""One decision in progress: the events decided so far, over a scratch state that later requests see."""

from __future__ import annotations

from copy import copy
from typing import Any

import msgspec

from .domain import KeyPoint, PlaybookState, Usage
from .events import Event, KeyPointAbsorbed, KeyPointAdded, KeyPointEvaluated, OperationSkipped
from .evolve import apply
from .legacy import to_jsonable
from .values import SkipKind, SkipReasonName


_NEW_OBJECTS_ONLY = (KeyPointAdded, OperationSkipped)
"""Events whose handlers change the state's containers and create entries, never changing one in place."""


def _containers_copied(state: PlaybookState) -> PlaybookState:
    """A copy of `state` whose dicts are its own and whose entries (key points, usage) are still `state`'s."""
    changes: dict[str, Any] = {}
    for name in state.__struct_fields__:
        value = getattr(state, name)
        if name == "sections":
            changes[name] = {section: dict(entries) for section, entries in value.items()}
        elif isinstance(value, (dict, list, set)):
            changes[name] = copy(value)
    return msgspec.structs.replace(state, **changes)


class Decision:
    """Events decided so far, applied to a scratch state so later requests see earlier ones.

    The scratch state shares the caller's key points and usage records until an event would change one
    in place: a decision of new key points, the common one, copies no entry of a large playbook."""

    def __init__(self, state: PlaybookState, texts: set[str] | None = None) -> None:
        """`texts`, when the caller keeps it, is every key point's text in `state` (the decision adds to a copy)."""
        self.state = _containers_copied(state)
        self._shared = True
        self.events: list[Event] = []
        self._texts: set[str] | None = None if texts is None else set(texts)

    def _own_entries(self) -> None:
        """Give the scratch state its own key points and usage records, in place (callers may hold it)."""
        for entries in self.state.sections.values():
            for name, kp in entries.items():
                entries[name] = KeyPoint(kp.name, kp.text, kp.helpful, kp.harmful)
        usage = self.state.usage
        for name, used in usage.items():
            usage[name] = Usage(used.injected, used.cited, used.last_used, used.stale)
        self._shared = False

    def emit(self, event: Event) -> None:
        if self._shared and not (isinstance(event, _NEW_OBJECTS_ONLY)
                                 and getattr(event, "name", None) not in self.state.where):
            self._own_entries()
        apply(self.state, event)
        self.events.append(event)
        if isinstance(event, KeyPointAdded):
            if self._texts is not None:
                self._texts.add(event.text)
        elif not isinstance(event, (OperationSkipped, KeyPointEvaluated, KeyPointAbsorbed)):
            self._texts = None  # any other event may change or remove a text: gathered again when next asked

    def texts(self) -> set[str]:
        """Every key point's text in the scratch state: gathered once, then kept up to date by the additions
        decided after it, so a command of many ADDs checks each for a duplicate without a pass over all."""
        if self._texts is None:
            self._texts = self.state.texts()
        return self._texts

    def skip(self, kind: SkipKind, reason: SkipReasonName, detail: str, index: int | None = None,
             item: Any = None) -> None:
        self.emit(OperationSkipped(kind=kind, reason=reason, detail=detail, index=index, operation=to_jsonable(item)))
