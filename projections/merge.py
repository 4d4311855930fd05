"""Merging two copies of a project's log: two git branches, or another machine's copy.

The bytes both copies share stay as they are. Each side's transactions after them are
replayed onto the merged state (`eventlog.merge`, on decide and evolve) and written again
after the shared bytes with new sequence numbers and hashes (`eventlog.store.restamp`); a
`BranchesMerged` transaction closes the merge and carries the conflicts it resolved.

With a common ancestor (git's merge base), a transaction of the ancestor that one side no
longer has was dropped by that side (a `git revert`, or a cherry-pick that did not bring
it): when ours still has it, it is undone by a revert transaction appended to the merge;
when only theirs has it, it is not brought over. The merged log is a pure function of the
inputs, so both sides of a merge write the same bytes.

A transaction the merge base, or both sides, hold at the same place must be the same bytes on
each: a side that holds other bytes there rewrote history after it was shared
(`shared_history`), and the merge is refused rather than adopt one version of it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import msgspec

from eventlog.decide import ReplaceContent, decide
from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError
from eventlog.events import BranchesMerged, Cause, Event, HistoryRewritten, KeyPointAdded, MergeConflictResolved
from eventlog.events import TransactionCommitted
from eventlog.evolve import apply_transaction
from eventlog.registry import touched_names
from eventlog.merge import Merged, Replayed, Tx, merge_transactions
from eventlog.logformat import restamp
from eventlog.faults import point as fault
from eventlog.safefiles import create_new, directory, remove, replace
from eventlog.store import Position

from .merge_reading import CHUNK, MergeRefused, common_prefix, fold_prefix, last_commit, log_size, rest_after, rest_until
from .shared_history import Parting, anchored_side, parting, purged_at
from .snapshot import playbook_dict

class SharedHistoryRewritten(MergeRefused):
    """A side holds a transaction of the history both share at its place, but in other bytes: a line of it was
    rewritten after it was shared. The evidence: `side` (ours | theirs), its first `line` that differs, the
    transaction `tx` holding it, and `by` what says that side rewrote it ("merge base", "purge", "anchors";
    "" when nothing does, and `side` is theirs only as the one that differs from ours). `purge` is the seq of
    that side's `HistoryRewritten` record naming the line, when it has one, and `reason` its reason (secrets |
    match); `command` is how the user runs a purge where the line says to (`playbook purge`, or with `--user`)."""

    def __init__(self, side: str, line: int, tx: str, by: str, purge: int | None = None, subject: str = "",
                 reason: str = "", command: str = "playbook purge") -> None:
        self.side, self.line, self.tx, self.by, self.purge, self.subject = side, line, tx, by, purge, subject
        self.reason, self.command = reason, command
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"at line {self.line} (transaction {self.tx})"
        if not self.by:
            said = (f"theirs differs from ours in shared history {where}, and neither a merge base nor an anchor "
                    f"says which side rewrote it: refused; ours is kept")
        elif self.purge is not None:
            other = "ours" if self.side == "theirs" else "theirs"
            how = ""
            if other == "ours":  # the purge to run here: the same as theirs, whose reason their record names
                how = (f" (`{self.command} --secrets`)" if self.reason == "secrets" else
                       f" (`{self.command} --match TEXT`, with the text purged there)" if self.reason == "match" else "")
            said = (f"{self.side} rewrites shared history {where} by a purge (HistoryRewritten at seq {self.purge}): "
                    f"refused; ours is kept; purge the same text in {other}{how}, then merge again")
        else:
            said = f"{self.side} rewrites shared history {where}: refused; ours is kept"
        return f"cannot merge {self.subject}: {said}" if self.subject else said

    def about(self, subject: str) -> SharedHistoryRewritten:
        """The same refusal, naming what was being merged."""
        return self._but(subject=subject)

    def run_as(self, command: str) -> SharedHistoryRewritten:
        """The same refusal, naming `command` as the way to purge (`playbook purge --user` for the user's log)."""
        return self._but(command=command)

    def _but(self, subject: str | None = None, command: str | None = None) -> SharedHistoryRewritten:
        return SharedHistoryRewritten(self.side, self.line, self.tx, self.by, self.purge,
                                      self.subject if subject is None else subject, self.reason,
                                      self.command if command is None else command)


class MergeOutcome(msgspec.Struct):
    """What a merge writes: the first `keep` bytes of `base` (ours or theirs), then `tail`."""

    base: str
    keep: int
    tail: bytes
    brought: int = 0
    """Transactions of theirs that ours did not have."""
    appended: int = 0
    """Transactions written again after the shared bytes (both sides', the merge record and any revert)."""
    conflicts: list[MergeConflictResolved] = []
    renamed: list[tuple[str, str]] = []
    reverted: list[str] = []
    left_out: list[str] = []

    @property
    def unchanged(self) -> bool:
        return self.base == "ours" and not self.tail


def _stable_id(*parts: object) -> str:
    """A transaction id both sides of a merge compute alike."""
    return hashlib.blake2b(msgspec.json.encode(parts), digest_size=8).hexdigest()


def _commit(tx: str, at: str, cause: Cause) -> TransactionCommitted:
    return TransactionCommitted(tx=tx, at=at, events=0, source=cause.source, session=cause.session,
                                model=cause.model, analysis=cause.analysis, reasoning=cause.reasoning, note=cause.note)


def _stamped(events: list[Event], tx: str, at: str) -> list[Event]:
    return [msgspec.structs.replace(event, tx=tx, at=at) for event in events]


def _revert(state_before: PlaybookState, current: PlaybookState, sequence: list[Tx], undo: set[str],
            at: str) -> Tx | None:
    """The transaction that undoes the transactions `undo` of `sequence` (whose fold is `current`), or None
    when that changes nothing. Refuses when later transactions changed the same entries."""
    without = state_before
    touched: set[str] = set()
    later: dict[str, list[str]] = {}
    seen_first = False
    for tx in sequence:
        names = {name for event in tx.events for name in touched_names(event)}
        if tx.commit.tx in undo:
            seen_first = True
            touched |= names
            continue
        apply_transaction(without, list(tx.events), tx.commit.seq, tx.commit.at)
        if seen_first:
            for name in names:
                later.setdefault(name, []).append(tx.commit.tx)
    conflicts = {name: txs for name, txs in later.items() if name in touched}
    if conflicts:
        detail = "; ".join(f"{name} by {', '.join(txs)}" for name, txs in sorted(conflicts.items()))
        raise MergeRefused(f"cannot undo {', '.join(sorted(undo))}: later transactions changed the same entries "
                           f"({detail}); keep ours and run `playbook revert TX --force` to undo the rest")
    events = decide(current, ReplaceContent(target=playbook_dict(without), origin="revert", base=current))
    if not events:
        return None
    tx_id = _stable_id("revert", sorted(undo))
    cause = Cause(source="revert", note=f"undoes {', '.join(sorted(undo))}, which the other side dropped")
    return Tx(_stamped(events, tx_id, at), _commit(tx_id, at, cause))


@dataclass
class _Sides:
    """Both logs after the bytes they share, and what each dropped of their ancestor's transactions."""

    state: PlaybookState
    """The fold of the shared bytes."""
    prefix: Position
    ours: list[Tx]
    theirs: list[Tx]
    ours_end: Position
    ours_size: int
    theirs_size: int
    left_out: set[str]
    undo: set[str]
    ancestor_tx: str
    brought: list[Tx]
    """Theirs that ours does not have and did not drop."""
    ours_only: list[Tx]


def _read_sides(ours: Path, theirs: Path, ancestor: Path | None, labels: tuple[str, str, str],
                anchors: Path | None = None) -> _Sides:
    """Both logs read after the bytes they share (MergeRefused for one that is not clean, or that rewrote what
    both share), and the ancestor's."""
    ours_label, theirs_label, _ancestor_label = labels
    shared = common_prefix(ours, theirs)
    ours_size, theirs_size = log_size(ours), log_size(theirs)
    state, prefix = fold_prefix(ours, shared, ours_label)
    ours_rest, ours_end = rest_after(ours, prefix, ours_label)
    theirs_rest, theirs_end = rest_after(theirs, prefix, theirs_label)
    if ours_end.offset != ours_size or theirs_end.offset != theirs_size:  # pragma: no cover - _rest checks
        raise MergeRefused("a log changed while it was being merged")
    _refuse_rewrite(ours, theirs, ancestor, shared, prefix, {"ours": ours_rest, "theirs": theirs_rest}, labels,
                    anchors)
    ours_ids = {tx.commit.tx for tx in ours_rest}
    theirs_ids = {tx.commit.tx for tx in theirs_rest}
    left_out, undo, ancestor_tx = _dropped(ancestor, ours, prefix, ours_ids, theirs_ids, labels)
    brought = [tx for tx in theirs_rest if tx.commit.tx not in ours_ids and tx.commit.tx not in left_out]
    ours_only = [tx for tx in ours_rest if tx.commit.tx not in theirs_ids]
    return _Sides(state, prefix, ours_rest, theirs_rest, ours_end, ours_size, theirs_size, left_out, undo,
                  ancestor_tx, brought, ours_only)


def merge_logs(ours: Path, theirs: Path, ancestor: Path | None = None, note: str = "merge",
               labels: tuple[str, str, str] = ("ours", "theirs", "the ancestor"),
               anchors: Path | None = None) -> MergeOutcome:
    """Merge log `theirs` into log `ours`, given their common `ancestor` log if known.

    Neither file is changed: the outcome says what to write (`write_merged`). Raises
    MergeRefused, with one line saying why, for a log that is damaged, hand-edited, ends in
    an unfinished write or holds records of a newer version, and `SharedHistoryRewritten`
    for one that rewrote history both share. `anchors`, ours' anchors file, can say which
    side that was when there is no `ancestor`.
    """
    sides = _read_sides(ours, theirs, ancestor, labels, anchors)
    if not sides.brought and not sides.undo:
        return MergeOutcome(base="ours", keep=sides.ours_size, tail=b"", left_out=sorted(sides.left_out))
    if not sides.ours_only and not sides.undo and not sides.left_out:
        return MergeOutcome(base="theirs", keep=sides.theirs_size, tail=b"", brought=len(sides.brought))
    if not sides.brought:  # only a revert: ours stays as it is, and the revert is appended
        return _revert_only(sides.state, sides.ours, sides.undo, sides.ours_end, sides.ours_size)
    return _replayed(sides, note)


def _replayed(sides: _Sides, note: str) -> MergeOutcome:
    """Both sides' transactions replayed after the shared bytes, a revert of what theirs dropped, the merge record."""
    before = sides.state.copy() if sides.undo else None
    merged: Merged = merge_transactions(sides.state, sides.ours, sides.theirs, frozenset(sides.left_out))
    sequence = [Tx(r.events, r.commit) for r in merged.transactions]
    at = max(r.commit.at for r in merged.transactions)
    written: list[Tx] = list(sequence)
    if sides.undo:
        assert before is not None
        revert = _revert(before, merged.state, sequence, sides.undo, at)
        if revert is not None:
            written.append(revert)
    written.append(_merge_record(sides, merged, len(sequence), at, note))
    tail, _end = restamp(written, sides.prefix)
    renamed = [(e.proposed_name, e.name) for r in merged.transactions if r.side != "both" for e in r.events
               if isinstance(e, KeyPointAdded) and e.proposed_name is not None and e.proposed_name != e.name]
    return MergeOutcome(base="ours", keep=sides.prefix.offset, tail=tail, brought=len(sides.brought),
                        appended=len(written), conflicts=list(merged.conflicts), renamed=renamed,
                        reverted=sorted(sides.undo), left_out=sorted(sides.left_out))


def _merge_record(sides: _Sides, merged: Merged, appended: int, at: str, note: str) -> Tx:
    """The `BranchesMerged` transaction: its id and time derive from what it merges, so both sides write it alike."""
    ours, theirs = sides.ours, sides.theirs
    heads = sorted({(ours[-1] if ours else theirs[-1]).commit.tx, (theirs[-1] if theirs else ours[-1]).commit.tx})
    record = BranchesMerged(heads=heads, ancestor=sides.ancestor_tx, shared_seq=sides.prefix.seq, appended=appended,
                            reverted=sorted(sides.undo))
    merge_tx = _stable_id("merge", heads, sides.ancestor_tx, sides.prefix.seq)
    events: list[Event] = [record, *merged.conflicts]
    return Tx(_stamped(events, merge_tx, at), _commit(merge_tx, at, Cause(source="merge", note=note)))


def _parting(reference: Path, side: Path, after: Position, part: int, label: str) -> Parting | None:
    try:
        return parting(reference, side, after, part)
    except CorruptLogError as exc:
        raise MergeRefused(f"{label} is not a clean log: line {exc.line}: {exc.reason}") from exc


def _refuse_rewrite(ours: Path, theirs: Path, ancestor: Path | None, shared: int, prefix: Position,
                    rests: dict[str, list[Tx]], labels: tuple[str, str, str], anchors: Path | None) -> None:
    """Raise `SharedHistoryRewritten` when a side holds a transaction of the merge base, or of the other side,
    at the same place in other bytes. `shared` is how many bytes ours and theirs share, `prefix` the commit
    position at or before it, `rests` each side's transactions after it."""
    found: list[tuple[Parting, str]] = []
    if ancestor is not None and log_size(ancestor):
        for side, path in (("ours", ours), ("theirs", theirs)):
            part = common_prefix(ancestor, path)
            # Before `shared` both sides hold the same bytes: where they part from the base there, they agree.
            if shared <= part < min(log_size(ancestor), log_size(path)):
                hit = _parting(ancestor, path, prefix, part, labels[2])
                if hit is not None:
                    found.append((hit, side))
    if found:
        hit, side = min(found, key=lambda item: item[0].line)
        raise _rewritten(side, hit, "merge base", purged_at(rests[side], hit.seq))
    if shared >= min(log_size(ours), log_size(theirs)):
        return
    pair = _parting(ours, theirs, prefix, shared, labels[0])
    if pair is None:
        return
    purges = {side: purged_at(rests[side], pair.seq) for side in ("ours", "theirs")}
    if (purges["ours"] is None) != (purges["theirs"] is None):
        side, by = ("ours" if purges["ours"] is not None else "theirs"), "purge"
    elif anchors is not None and (said := anchored_side(anchors, pair)) is not None:
        side, by = ("ours" if said == "reference" else "theirs"), "anchors"
    else:
        side, by = "theirs", ""
    raise _rewritten(side, pair, by, purges[side] if by == "purge" else None)


def _rewritten(side: str, where: Parting, by: str, purge: HistoryRewritten | None) -> SharedHistoryRewritten:
    return SharedHistoryRewritten(side, where.line, where.tx, by, purge.seq if purge else None,
                                  reason=purge.reason if purge else "")


def _dropped(ancestor: Path | None, ours: Path, prefix: Position, ours_ids: set[str], theirs_ids: set[str],
             labels: tuple[str, str, str]) -> tuple[set[str], set[str], str]:
    """What each side dropped of the ancestor's transactions: (dropped by ours: not brought over, dropped by
    theirs: undone, the ancestor's last transaction id)."""
    ours_label, _theirs_label, ancestor_label = labels
    left_out: set[str] = set()
    undo: set[str] = set()
    if ancestor is None or not log_size(ancestor):
        return left_out, undo, ""
    ancestor_size = log_size(ancestor)
    ancestor_tx = last_commit(ancestor, ancestor_size)
    in_ours = common_prefix(ancestor, ours)
    if in_ours == ancestor_size and ancestor_size <= prefix.offset:
        return left_out, undo, ancestor_tx
    _state, start = fold_prefix(ancestor, min(in_ours, prefix.offset), ancestor_label)
    ancestor_rest, _end = rest_after(ancestor, start, ancestor_label)
    if start.offset < prefix.offset:  # the part of the shared bytes after `start`: both sides have it
        between, _ = rest_until(ours, start, prefix.offset, ours_label)
    else:
        between = set()
    for tx in ancestor_rest:
        if tx.commit.tx in between:
            continue
        if tx.commit.tx not in ours_ids:
            left_out.add(tx.commit.tx)
        elif tx.commit.tx not in theirs_ids:
            undo.add(tx.commit.tx)
    return left_out, undo, ancestor_tx


def _revert_only(state: PlaybookState, ours_rest: list[Tx], undo: set[str], ours_end: Position,
                 ours_size: int) -> MergeOutcome:
    """Nothing to bring over, only the ancestor's transactions theirs dropped to undo: ours, and a revert."""
    before = state.copy()
    current = state
    for tx in ours_rest:
        apply_transaction(current, list(tx.events), tx.commit.seq, tx.commit.at)
    at = max(tx.commit.at for tx in ours_rest)
    revert = _revert(before, current, ours_rest, undo, at)
    if revert is None:
        return MergeOutcome(base="ours", keep=ours_size, tail=b"", reverted=sorted(undo))
    tail, _end = restamp([revert], ours_end)
    return MergeOutcome(base="ours", keep=ours_size, tail=tail, appended=1, reverted=sorted(undo))


MERGE_TEMP_SUFFIX = ".merge.tmp"
"""The end of a merged log's name while it is written: `.<target's name>.<pid>.merge.tmp`."""


def merge_temp(target: Path, directory: Path | None = None) -> Path:
    """Where the merged log for `target` is written before it is moved into place: in `directory` (on the same
    file system; by default beside `target`), named for `target` and this process."""
    return (directory or target.parent) / f".{target.name}.{os.getpid()}{MERGE_TEMP_SUFFIX}"


def write_merged(outcome: MergeOutcome, ours: Path, theirs: Path, target: Path, root: Path | None = None,
                 scratch: Path | None = None) -> None:
    """Write the merged log to `target` (which may be `ours`): a new file, written in `scratch` (beside `target`
    by default), moved into place, never a half one.

    Follows no link below `root` (a project's, for its log; by default `target`'s directory as the caller
    named it, as git names %A): the new file is created, and renamed over `target`, inside directories
    reached without one."""
    source = ours if outcome.base == "ours" else theirs
    root = root if root is not None else target.parent
    temp = merge_temp(target, scratch).name
    with directory(target.parent, root) as dir_fd, directory(scratch or target.parent, root) as scratch_fd:
        fd = create_new(scratch_fd, temp)
        try:
            with os.fdopen(fd, "wb") as writing, open(source, "rb") as reading:
                remaining = outcome.keep
                while remaining:
                    block = reading.read(min(remaining, CHUNK))
                    if not block:
                        raise MergeRefused(f"{source} shrank while it was being merged")
                    writing.write(block)
                    remaining -= len(block)
                writing.write(outcome.tail)
                writing.flush()
                os.fsync(writing.fileno())
            fault("merge-before-replace")
            replace(scratch_fd, temp, target.name, dir_fd)
        except BaseException:
            remove(scratch_fd, temp)
            raise


__all__ = ["MERGE_TEMP_SUFFIX", "MergeOutcome", "MergeRefused", "Replayed", "SharedHistoryRewritten", "common_prefix",
           "merge_logs", "merge_temp", "write_merged"]
