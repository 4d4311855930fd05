"""What a writer finds outside the log and takes in: a legacy playbook.json, a hand edit, an unreadable file.

Each is appended as a transaction of its own before a writer decides anything, so the log stays the
only record of the playbook. A playbook.json that reflects a log position this log does not hold
(`Divergence`) is the last copy of what it holds beyond the log: it is recorded as moved aside, then
moved to `playbook.json.ahead-*`; unreadable bytes go to `playbook.json.unreadable-*` and a legacy file
is copied to `playbook.json.legacy-*` before its import, so no byte is lost.

What a hand edit or a legacy file holds is scrubbed of secrets before it is decided, as a model's reply
is: it would otherwise reach every later session and everyone the log is shared with. The transaction's
note says which kinds were redacted, never the values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from eventlog.decide import Command, ImportLegacy, RecordUnreadableFile, ReplaceContent, decide_all
from eventlog.domain import PlaybookState
from eventlog.errors import StorageError
from eventlog.events import Cause, SnapshotSetAside
from eventlog.safefiles import directory, replace, write_atomically
from eventlog.store import Committed, Position
from eventlog.storage import EventStore
from eventlog.unit_of_work import commit

from .snapshot import ReadSnapshot, claimed_position

Reader = Callable[[], tuple[PlaybookState, Position]]


class Housekept(NamedTuple):
    """The state at the log's end after taking in what waited outside it, and the transactions that did."""

    state: PlaybookState
    position: Position
    taken_in: tuple[Committed, ...]


class Divergence(msgspec.Struct, frozen=True):
    """playbook.json reflects a position (`seq`, ending at byte `offset`) that the log, `log_size` bytes
    long, does not hold: ahead of it when the position lies past its end, else beside it."""

    seq: int
    offset: int
    log_size: int

    @property
    def ahead(self) -> bool:
        return self.offset > self.log_size

    def describe(self) -> str:
        if self.ahead:
            return (f"playbook.json is ahead of the log: it reflects seq {self.seq} (byte {self.offset}) and the log "
                    f"ends at byte {self.log_size}")
        return (f"playbook.json reflects seq {self.seq} (byte {self.offset}) of another history than the log's, "
                "or a damaged line")


def divergence(store: EventStore, found: ReadSnapshot | None) -> Divergence | None:
    """How the snapshot `found` and the log disagree, when it reflects a position the log does not hold."""
    if found is None or found.snapshot is None or found.snapshot.log is None or not found.snapshot.log.offset:
        return None
    size = store.size()
    if not size:
        return None  # no log at all: the snapshot is imported as the log's first transaction
    log = found.snapshot.log
    position = Position(offset=log.offset, seq=log.seq, hash=log.hash, line=log.line)
    if log.offset <= size and store.holds(position):
        return None
    return Divergence(seq=log.seq, offset=log.offset, log_size=size)


class Outside:
    """Takes in what waits outside the log of `store` at `snapshot_path`; the caller holds the log's lock.

    `current` reads the state at the log's end and `checkpoint` a trustworthy point to fold from. What it
    moves or copies aside stays in playbook.json's directory, reached from `root` without following a link."""

    def __init__(self, store: EventStore, snapshot_path: Path, current: Reader, checkpoint: Reader,
                 root: Path | None = None) -> None:
        self.store = store
        self.snapshot_path = snapshot_path
        self.current = current
        self.checkpoint = checkpoint
        self.root = root if root is not None else snapshot_path.parent.parent

    def take_in(self, found: ReadSnapshot | None) -> Housekept | None:
        """The transactions that take in what `found`, a playbook.json that does not diverge, holds beyond the
        log; None when it is the log's own projection (readable, with its log block)."""
        has_log = self.store.exists()
        path = str(self.snapshot_path)
        if has_log and found is not None and found.snapshot is None and not isinstance(found.data, dict):
            # JSON, but no playbook: read as a hand edit it would delete every entry. Kept like unreadable bytes.
            found = ReadSnapshot(error=found.error or f"{path} holds a JSON {_json_kind(found.data)}, not an object")
        if found is not None and found.error is not None:
            return self._record_unreadable(found.error, has_log)
        if not has_log:
            if found is None or (found.snapshot is not None and found.snapshot.log is not None
                                  and found.snapshot.log.offset == 0):
                return Housekept(PlaybookState(), Position(), ())  # nothing yet, or our own empty projection
            data = msgspec.to_builtins(found.snapshot) if found.snapshot is not None else found.data
            kept = self._keep_original()
            taken = scrubbed_content(data, "playbook.json found without a log")
            return self._commit([ImportLegacy(data=taken.data, path=path, genesis=True, kept_at=kept)],
                                Cause(source="import", note=taken.note))
        if found is not None and found.snapshot is None:
            return self._import_manual_edit(found)
        return None

    def set_aside_diverged(self, diverged: Divergence) -> Housekept:
        """Record that playbook.json is moved aside, then move it: its bytes stay, under a name the log gives."""
        target = self._aside_name("ahead")
        state, position = self.current()
        event = SnapshotSetAside(moved_to=target.name, error=diverged.describe(),
                                 kind="ahead" if diverged.ahead else "beside")
        committed = commit(self.store, state, position, lambda _s: [event],
                           Cause(source="rebuild", note="playbook.json kept aside"))
        assert committed is not None
        try:
            self._move_aside(target)
        except OSError as exc:
            raise StorageError.failed("move aside", self.snapshot_path, exc) from exc
        return Housekept(committed.state, committed.position, (committed,))

    def _record_unreadable(self, error: str, has_log: bool) -> Housekept:
        moved = self._set_aside()
        if not has_log:
            return self._commit([RecordUnreadableFile(path=str(self.snapshot_path), moved_aside=moved, error=error)],
                                Cause(source="import", note="unreadable playbook.json"))
        state, position = self.current()
        event = SnapshotSetAside(moved_to=moved or "", error=error)
        committed = commit(self.store, state, position, lambda _s: [event], Cause(source="rebuild"))
        assert committed is not None
        return Housekept(committed.state, committed.position, (committed,))

    def _commit(self, commands: Sequence[Command], cause: Cause) -> Housekept:
        state, position = self.checkpoint() if self.store.exists() else (PlaybookState(), Position())
        committed = commit(self.store, state, position, lambda s: decide_all(s, commands), cause)
        if committed is None:
            return Housekept(*self.store.fold(state, position)[:2], ())
        return Housekept(committed.state, committed.position, (committed,))

    def _import_manual_edit(self, found: ReadSnapshot) -> Housekept:
        """A playbook.json that differs from what the log says it should be: its edits become events."""
        base = self._claimed_base(found.data)
        taken = scrubbed_content(found.data, f"{self.snapshot_path.name} edited by hand")
        return self._commit([ReplaceContent(target=taken.data, origin="manual_edit", base=base)],
                            Cause(source="manual_edit", note=taken.note))

    def _claimed_base(self, data: object) -> PlaybookState | None:
        """The state at the log position an edited snapshot still claims, if that claim holds."""
        position = claimed_position(data)
        if position is None or not self.store.holds(position):
            return None
        return self.store.fold(PlaybookState(), Position(), position.offset)[0]

    def _keep_original(self) -> str | None:
        """Copy the file about to be imported, byte for byte: the projection will replace it, and
        what it held beyond the playbook (unknown keys, odd values) must not be lost."""
        target = self._aside_name("legacy")
        try:
            data = self.snapshot_path.read_bytes()
            with directory(self.snapshot_path.parent, self.root) as dir_fd:
                write_atomically(dir_fd, target.name, data)
        except OSError as exc:
            raise StorageError.failed("keep a copy of", self.snapshot_path, exc) from exc
        return target.name

    def _set_aside(self) -> str | None:
        target = self._aside_name("unreadable")
        try:
            self._move_aside(target)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError.failed("move aside", self.snapshot_path, exc) from exc
        return target.name

    def _move_aside(self, target: Path) -> None:
        """Rename playbook.json to `target` beside it (a link under its name is moved itself, never followed)."""
        with directory(self.snapshot_path.parent, self.root) as dir_fd:
            replace(dir_fd, self.snapshot_path.name, target.name)

    def _aside_name(self, kind: str) -> Path:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        return self.snapshot_path.with_name(f"{self.snapshot_path.name}.{kind}-{stamp}")


REDACTED = "; redacted "
"""Where a transaction's note, after saying what it took in, goes on to say which secrets it redacted."""


class Scrubbed(NamedTuple):
    """A playbook file's content with its secrets redacted; the transaction's note, saying which kinds when
    there were any; and `redacted N secrets (kinds)`, or None."""

    data: Any
    note: str
    said: str | None


def scrubbed_content(data: Any, note: str) -> Scrubbed:
    """`data` (a playbook file read whole) with its secrets redacted, and `note` saying which kinds, if any.

    Whatever a hand edit or an old file holds enters the log and every later session the same way a
    model's reply would: it is scrubbed like one."""
    from .redactor import Redactor  # detect-secrets: loaded only when there is a file to take in

    redactor = Redactor()
    scrubbed = redactor.value(data)
    said = redactor.said()
    return Scrubbed(scrubbed, note if said is None else f"{note}; {said} before storing it", said)


def redactions_said(committed: Committed) -> str | None:
    """The note of a transaction that took in playbook.json, when it says secrets were redacted from it."""
    note = committed.commit.note or ""
    return note if committed.commit.source in ("manual_edit", "import") and REDACTED in note else None


def _json_kind(value: object) -> str:
    kinds = {type(None): "null", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return kinds.get(type(value), type(value).__name__)
