"""One decision in progress: the events decided so far, over a scratch state that later requests see."""

from __future__ import annotations

from typing import Any

from .domain import PlaybookState
from .events import Event, OperationSkipped
from .evolve import apply
from .legacy import to_jsonable
from .values import SkipKind, SkipReasonName


class Decision:
    """Events decided so far, applied to a scratch state so later requests see earlier ones."""

    def __init__(self, state: PlaybookState) -> None:
        self.state = state.copy()
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        apply(self.state, event)
        self.events.append(event)

    def skip(self, kind: SkipKind, reason: SkipReasonName, detail: str, index: int | None = None,
             item: Any = None) -> None:
        self.emit(OperationSkipped(kind=kind, reason=reason, detail=detail, index=index, operation=to_jsonable(item)))
