"""One decision in progress: the events decided so far, over a scratch state that later requests see."""

from __future__ import annotations

from typing import Any

from .domain import PlaybookState
from .events import Event, KeyPointAdded, KeyPointEvaluated, OperationSkipped
from .evolve import apply
from .legacy import to_jsonable
from .values import SkipKind, SkipReasonName


class Decision:
    """Events decided so far, applied to a scratch state so later requests see earlier ones."""

    def __init__(self, state: PlaybookState) -> None:
        self.state = state.copy()
        self.events: list[Event] = []
        self._texts: set[str] | None = None

    def emit(self, event: Event) -> None:
        apply(self.state, event)
        self.events.append(event)
        if isinstance(event, KeyPointAdded):
            if self._texts is not None:
                self._texts.add(event.text)
        elif not isinstance(event, (OperationSkipped, KeyPointEvaluated)):
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
