"""Read-only queries over the log's past: the commit index, state at a point, history of an entry, newest transactions.

State as of any point is one fold of a log prefix. Checkpoints (folded states kept
in `.claude/playbook.checkpoints/`, derived from the log and rebuilt at will, never
trusted without checking their position's hash in the log) keep that fast on long
logs. History (`projections.history`) and `log -n` find what they need by byte search and read only
those transactions, so neither folds the whole log.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from eventlog import events as ev
from eventlog import logformat
from eventlog.domain import KeyPoint, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Event, TransactionCommitted, UnknownRecord
from eventlog.registry import json_string, mentions
from eventlog.checks import chained
from eventlog.store import Position, Transaction, fold_log

from . import checkpoints
from .quickroads import CHECKPOINT_DIR
from .commitindex import CommitIndex, CommitRef
from .history import damaged, entry_after, mentioning
from .repository import PlaybookRepository


_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class TimelineError(PlaybookError):
    """A point in time, transaction, session or entry that the log does not have: `named` is what was
    asked for, `candidates` what it could mean when it is ambiguous."""

    def __init__(self, message: str, *, named: str = "", candidates: tuple[str, ...] = ()) -> None:
        self.named, self.candidates = named, candidates
        super().__init__(message)


class HistoryItem(msgspec.Struct, frozen=True):
    """One thing that happened to an entry: the event, its transaction's commit, and the entry after it."""

    event: Event
    commit: TransactionCommitted
    entry: str
    after: KeyPoint | None


Removal = ev.KeyPointDeleted | ev.KeyPointPruned | ev.KeyPointsMerged
"""What takes an entry out of the playbook: a deletion, a prune, a merge into another (`entry_after`)."""


class Fate(msgspec.Struct, frozen=True):
    """Where the lesson an entry held lives now.

    `merged_into` are the entries it was merged into, in turn. `live` is the entry that holds it now (the
    entry itself when it was never merged away), or None: then `removed` (a deletion or a prune, committed by
    `commit`) took the last of them out of the playbook, or, without it, the entry was only ever named."""

    live: str | None
    merged_into: list[str] = []
    removed: Removal | None = None
    commit: TransactionCommitted | None = None


def _ending(name: str, steps: list[tuple[Event, TransactionCommitted]]
            ) -> tuple[bool, tuple[Removal, TransactionCommitted] | None]:
    """(whether `name` is in the playbook after `steps`, the step that last took it out)."""
    kp: KeyPoint | None = None
    ending: tuple[Removal, TransactionCommitted] | None = None
    for event, commit in steps:
        after = entry_after(kp, event, name)
        if after is None and kp is not None and isinstance(event, Removal):
            ending = event, commit
        elif after is not None:
            ending = None
        kp = after
    return kp is not None, ending


# --- one transaction ---------------------------------------------------------------------------


def read_transaction(path: Path, ref: CommitRef) -> Transaction:
    """The one transaction `ref` points at, read and decoded on its own.

    Its bytes are checked against its commit line's `h` (one hash); damage raises CorruptLogError
    with the file, line and byte of the first damaged line."""
    with open(path, "rb") as handle:
        handle.seek(ref.start.offset)
        data = handle.read(ref.end.offset - ref.start.offset)
    try:
        records = logformat.decode_records(data)
    except logformat.DECODE_ERRORS:
        records = []
    if (not records or type(records[-1]) is not TransactionCommitted or records[-1].events != len(records) - 1
            or not chained(data, ref.start.hash)):
        raise damaged(path, ref.end.offset)
    return Transaction(events=records[:-1], commit=records[-1], start=ref.start, end=ref.end)


class Timeline:
    """The past of one project's playbook."""

    def __init__(self, repo: PlaybookRepository) -> None:
        self.repo = repo
        self.path = repo.log_path
        self.checkpoint_dir = repo.claude_dir / CHECKPOINT_DIR
        self._refs: CommitIndex | None = None

    @property
    def refs(self) -> CommitIndex:
        """The commit index (`projections.commitindex`), kept beside the checkpoints and extended as the log grows."""
        if self._refs is None:
            self._refs = CommitIndex.load(self.path, self.checkpoint_dir, self.repo.root)
        return self._refs

    # --- resolving a point ------------------------------------------------------------------

    def match_tx(self, text: str) -> list[int]:
        """Indexes of the transaction `text` names: its full id, or a prefix of 6+ characters that
        only one transaction has. Raises TimelineError on an ambiguous prefix."""
        refs = self.refs
        beginning = refs.beginning(text) if text else []
        exact = [i for i in beginning if refs.tx(i) == text]
        if exact or len(text) < 6:
            return exact
        if len(beginning) > 1:
            shown = ", ".join(refs.tx(i) for i in beginning[:5])
            raise TimelineError(f"{text!r} is ambiguous: it begins {len(beginning)} transactions ({shown})", named=text,
                                candidates=tuple(refs.tx(i) for i in beginning))
        return beginning

    def txs_beginning(self, text: str) -> list[str]:
        """The ids of the transactions that begin with `text`, sorted, each once."""
        refs = self.refs
        return sorted({refs.tx(i) for i in refs.beginning(text)}) if text else []

    def match(self, text: str) -> list[int]:
        """Indexes of the transactions `text` names: one transaction, or every transaction of a session
        (its full id, or a prefix of 6+ characters that only one session has). Raises TimelineError on
        an ambiguous prefix."""
        refs = self.refs
        found = self.match_tx(text)
        if found or not text:
            return found
        beginning = refs.beginning(text, session=True)
        found = [i for i in beginning if refs.session(i) == text]
        if found or len(text) < 6:
            return found
        sessions = sorted({session for i in beginning if (session := refs.session(i))})
        if len(sessions) > 1:
            raise TimelineError(f"{text!r} is ambiguous: it begins {len(sessions)} sessions ({', '.join(sessions[:5])})",
                                named=text, candidates=tuple(sessions))
        return [i for i in beginning if sessions and refs.session(i) == sessions[0]]

    def commit_ending_at(self, seq: int) -> TransactionCommitted | None:
        """The commit record of the transaction that ends at `seq`, if one does (a binary search)."""
        refs = self.refs
        index = refs.last_ending_by(seq) if seq > 0 else -1
        return refs.commit(index) if index >= 0 and refs.seq(index) == seq else None

    def resolve(self, when: str, before: bool = False) -> Position:
        """The log position `when` names: a seq number, a transaction id or a session id (for those, the
        point just after it, or `before` it), or an ISO time. The command line's WHEN (`2h` ago, a trailing
        `^`) is `playbook.commands.when`'s."""
        text = when.strip()
        # isdecimal, not isdigit: int() rejects "³", which isdigit accepts.
        if text.isdecimal() and len(text) < 16:  # a seq needs no index: the fold stops at it
            return Position(offset=-1, seq=max(int(text) - (1 if before else 0), 0))
        refs = self.refs
        matching = self.match(text)
        if matching:
            index = matching[0] if before else matching[-1]
            return refs[index].start if before else refs[index].end
        try:
            moment = parse_time(text)
        except ValueError:
            raise TimelineError(f"{when!r} is neither a time, a seq, a transaction nor a session", named=when) from None
        return self.position_at(moment)

    def position_at(self, moment: datetime) -> Position:
        """The point just after the last transaction committed at or before `moment`."""
        refs = self.refs
        delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
        limit = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        for index in range(len(refs) - 1, -1, -1):
            micros = refs.micros(index)
            if micros is None:
                if parse_time(refs.commit(index).at) <= moment:  # raises ValueError, as for any unreadable time
                    return refs.end(index)
            elif micros <= limit:
                return refs.end(index)
        return Position()


    # --- state at a point -------------------------------------------------------------------

    def state_at(self, position: Position) -> PlaybookState:
        """The playbook as it was at `position` (all transactions up to its seq): one fold of the
        log prefix, from the nearest checkpoint, on the fast path; a checkpoint mark passed on the
        way leaves a checkpoint."""
        state, start = self._nearest(position)
        refs = self.refs
        if position.offset >= 0:
            end = position.offset
        else:  # a seq alone: the end of the last transaction that ends by it, found in the index
            index = refs.last_ending_by(position.seq)
            end = refs.end(index).offset if index >= 0 else 0
        if end <= start.offset:
            return state
        every = checkpoints.CHECKPOINT_EVERY
        mark = (start.seq // every + 1) * every
        while True:
            crossing = refs.last_ending_by(mark - 1) + 1  # the transaction that passes the mark
            if crossing >= len(refs) or refs.end(crossing).offset > end:
                break
            stop = refs.end(crossing)
            state, start, _torn = fold_log(self.path, state, start, until=stop.offset)
            if start.offset != stop.offset:
                return state  # the log no longer reads as its index says: what was folded is all there is
            self._save_checkpoint(state, stop)
            mark = (stop.seq // every + 1) * every
        state, _position, _torn = fold_log(self.path, state, start, until=end)
        return state

    def _nearest(self, position: Position) -> tuple[PlaybookState, Position]:
        state, start = self.repo.checkpoint()
        if not 0 < start.seq <= position.seq:
            state, start = PlaybookState(), Position()
        saved = checkpoints.nearest(self.checkpoint_dir, self.path, position.seq, after=start.seq)
        if saved is not None:
            return saved.state, saved.position
        return state.copy(), start

    def _save_checkpoint(self, state: PlaybookState, position: Position) -> None:
        checkpoints.save(self.checkpoint_dir, state, position, root=self.repo.root)

    def clear_checkpoints(self) -> int:
        """Remove every checkpoint and the commit index (derived data: they come back when needed)."""
        return checkpoints.clear(self.checkpoint_dir, self.repo.root)

    # --- transactions ------------------------------------------------------------------------

    def newest(self, n: int | None = None, keep: Any = None, since: str | None = None) -> list[Transaction]:
        """Transactions newest first, at most `n`, those for which `keep(transaction)` holds, and with
        `since` (an ISO time or its prefix) only those committed at or after it.

        Reads the log backwards from its end, so the newest few cost the same on any length."""
        found = []
        for ref in self._refs_from_end():
            if since is not None and ref.commit.at[:len(since)] < since:
                break
            transaction = read_transaction(self.path, ref)
            if keep is None or keep(transaction):
                found.append(transaction)
                if n is not None and len(found) >= n:
                    break
        return found

    def last_commit(self) -> TransactionCommitted | None:
        """The commit record of the log's last transaction, found from the end (its events are not read)."""
        return next((ref.commit for ref in self._refs_from_end()), None)

    def _refs_from_end(self) -> Iterator[CommitRef]:
        """Commit positions from the last one back (line numbers unknown: 0)."""
        if self._refs is not None:
            yield from reversed(self._refs)
            return
        try:
            handle = open(self.path, "rb")
        except (FileNotFoundError, NotADirectoryError):
            return
        with handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                ends: list[tuple[int, TransactionCommitted, str]] = []
                for begin, raw in logformat.commits_from_end(data):
                    try:
                        commit = logformat.commit_decoder.decode(raw)
                    except (msgspec.DecodeError, msgspec.ValidationError):
                        continue
                    end, running = begin + len(raw), logformat.hash_after(raw)
                    if ends:
                        later_end, later_commit, later_hash = ends.pop()
                        yield CommitRef(commit=later_commit, start=Position(end, commit.seq, running, 0),
                                        end=Position(later_end, later_commit.seq, later_hash, 0))
                    ends.append((end, commit, running))
                if ends:
                    first_end, first_commit, first_hash = ends.pop()
                    yield CommitRef(commit=first_commit, start=Position(),
                                    end=Position(first_end, first_commit.seq, first_hash, 0))

    def transaction(self, tx: str) -> Transaction:
        found = self.match_tx(tx)
        if not found:
            raise TimelineError(f"no transaction {tx!r} in the log", named=tx)
        return read_transaction(self.path, self.refs[found[0]])

    # --- history of one entry -----------------------------------------------------------------

    def history(self, name: str) -> list[HistoryItem]:
        """Everything that happened to entry `name`, oldest first, with the entries it was merged from.

        One backward pass over the file, whatever the number of merges followed (see `history.mentioning`)."""
        needle = json_string(name)
        items = self._history(name, None, set(), mentioning(self.path, name) if needle is not None else {})
        if not items:
            raise TimelineError(f"no entry {name!r} in the log", named=name)
        return items

    def fate(self, name: str, items: list[HistoryItem]) -> Fate:
        """Where the lesson of entry `name` (whose `history` is `items`) lives now: each merge that took it
        followed forward to the entry holding it, or to the deletion or prune that removed it."""
        steps = [(item.event, item.commit) for item in items if item.entry == name]
        current = name
        merged_into: list[str] = []
        while True:
            alive, ending = _ending(current, steps)
            if alive:
                return Fate(live=current, merged_into=merged_into)
            if ending is None:
                return Fate(live=None, merged_into=merged_into)
            event, commit = ending
            if not isinstance(event, ev.KeyPointsMerged) or event.name == name or event.name in merged_into:
                return Fate(live=None, merged_into=merged_into, removed=event, commit=commit)
            current = event.name
            merged_into.append(current)
            steps = [(e, transaction.commit)
                     for transaction in mentioning(self.path, current, follow=False).get(current, ())
                     for e in transaction.events if not isinstance(e, UnknownRecord) and mentions(e, current)]

    def _history(self, name: str, until: int | None, seen: set[str],
                 mentioning: dict[str, list[Transaction]]) -> list[HistoryItem]:
        seen.add(name)
        items: list[HistoryItem] = []
        kp: KeyPoint | None = None
        for transaction in mentioning.get(name, ()):
            if until is not None and transaction.start.seq >= until:
                break
            for event in transaction.events:
                if isinstance(event, UnknownRecord) or not mentions(event, name):
                    continue
                if isinstance(event, ev.KeyPointsMerged) and event.name == name:
                    for source in event.sources:
                        if source not in seen:
                            items.extend(self._history(source, event.seq, seen, mentioning))
                kp = entry_after(kp, event, name)
                items.append(HistoryItem(event=event, commit=transaction.commit, entry=name,
                                         after=None if kp is None else KeyPoint(kp.name, kp.text, kp.helpful, kp.harmful)))
        return items



def parse_time(text: str) -> datetime:
    """An ISO time; one without a zone is UTC. Raises ValueError."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
