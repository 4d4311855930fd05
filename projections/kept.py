"""What a writer keeps of its last append, and whether its next append may start from it.

A writer that finds the log and playbook.json as it left them trusts the state it kept instead of
rebuilding it from playbook.json; another writer's append, a hand edit, a lost or replaced file sends
it back to reading the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from eventlog.domain import PlaybookState
from eventlog.events import Event, KeyPointAdded, OperationSkipped
from eventlog.store import Position
from eventlog.storage import EventStore

from .injection import Ranking
from .snapshot import read_snapshot


class Kept(NamedTuple):
    """What a writer keeps of its last append: the state and position it wrote, and the marks that say nothing
    else wrote since (the log's inode, size and mtime; playbook.json's digest, the log end it reflects, its size)."""

    state: PlaybookState
    position: Position
    log_mark: tuple[int, int, int]
    snapshot_digest: str
    reflected: tuple[int, int]
    ranking: Ranking | None
    """The injection plan's ranking of `state`."""
    texts: set[str] | None
    """Every key point's text in `state`, for the duplicate check, when the last append added some."""


def still_current(kept: Kept | None, store: EventStore, snapshot_path: Path) -> bool:
    """True when nothing wrote the log or playbook.json since `kept` was left; the caller holds the lock.

    playbook.json is read whole (its digest checked against the one written or read then); a hand edit,
    a lost or unreadable file, or another writer's append, fails the check."""
    if kept is None or store.mark() != kept.log_mark:
        return False
    found = read_snapshot(snapshot_path)
    return not (found is None or found.snapshot is None or found.snapshot.log is None
                or found.snapshot.log.digest != kept.snapshot_digest or found.size != kept.reflected[1])


def texts_after(texts: set[str] | None, count: int, state: PlaybookState, events: Sequence[Event]) -> set[str] | None:
    """Every key point's text in `state`, which held `count` key points and `texts` before `events`: `texts`
    grown in place when the events only added new key points or skipped, gathered again when they added some
    otherwise, and None (left to the next decision) when they added none."""
    added = [event.text for event in events if isinstance(event, KeyPointAdded)]
    if not added:
        return texts if texts is not None and all(isinstance(event, OperationSkipped) for event in events) else None
    if (texts is None or len(state.where) != count + len(added)
            or not all(isinstance(event, (KeyPointAdded, OperationSkipped)) for event in events)):
        return state.texts()
    texts.update(added)
    return texts
