"""Checking a project's log and snapshot: every line's hash and sequence, every transaction, the snapshot.

Reports the exact file, line and byte of any damage; never changes a file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError
from eventlog.events import TransactionCommitted
from eventlog.store import LogReader, Position, fold_log
from eventlog import wholecheck
from eventlog.wholecheck import halves_fold, parallel_fold

from .checkpoints import Checkpoint, nearest, seq_of
from .quickroads import CHECKPOINT_DIR

from .repository import PlaybookRepository
from .snapshot import claimed_position, may_lag, read_snapshot, render


_CHUNK = 4 << 20
HOLDS_MORE = "it holds what the log does not"
"""How the report names a playbook.json ahead of the log or beside it."""


class Problem(msgspec.Struct, frozen=True):
    file: str
    line: int | None
    offset: int | None
    what: str


class Report(msgspec.Struct):
    log: str
    snapshot: str
    transactions: int = 0
    events: int = 0
    seq: int = 0
    problems: list[Problem] = []
    notes: list[str] = []
    """What was found and set right before the check (a snapshot brought up to date)."""
    anchors: int | None = None
    """With `--anchor`: how many recorded heads the log was proved to extend."""

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(repo: PlaybookRepository, strict: bool = False) -> Report:
    """Check the hash chain, the sequence and every transaction of the log, and that the snapshot is its projection.

    One pass on the store's fast path: a chunk's chain is checked with one call up to its last commit
    and every line's seq against its place, and anything it does not vouch for is read again line by
    line, which names the first damaged line, so the verdicts are those of `strict=True` (every line
    checked on its own, the slow road; `tests/test_check_verdicts.py` compares the two). A large log is
    checked on two cores (`_two_cores`), with the same verdicts."""
    path = repo.log_path
    report = Report(log=str(path), snapshot=str(repo.snapshot_path), problems=[], notes=[])
    count = _Commits(path)
    state: PlaybookState | None
    found = None if strict else _two_cores(repo, count)
    if found is not None:
        reader, state = found
    else:  # a small log, or the two-core road did not vouch for its result
        folded, count = PlaybookState(), _Commits(path)
        state = folded
        reader = LogReader(path, strict=strict)
        try:
            reader.fold(folded, observe=count.add, seqs=True, whole=WHOLE)
        except CorruptLogError as exc:
            report.problems.append(Problem(str(exc.path), exc.line, exc.offset, exc.reason))
            state = None
    position = reader.position
    report.transactions = count.commits
    report.events = position.line - report.transactions
    report.seq = position.seq
    if (torn_problem := _torn_problem(reader, path)) is not None:
        report.problems.append(torn_problem)
    if state is not None and count.again is not None:
        report.problems.append(count.again)
    if state is not None:
        _check_snapshot(repo, state, position, report)
    return report


WHOLE = (TransactionCommitted,)
"""What verify's folds decode whole: the commits, whose transaction ids tell a transaction written twice."""
_COMMIT_START = b'\n{"type":"TransactionCommitted","seq":'
"""How a commit line begins (after the line before it), up to its seq; its tx follows, as every writer encodes it."""
_EVENTS = re.compile(rb',"events":(\d+)')


def _commit_ids(path: Path, end: int) -> Iterator[tuple[str, int, int]]:
    """(tx, seq, events) of each commit line before byte `end`, found by byte search: for the half of a log a
    forked child folded, whose records this process never sees. Lines the child checked, or the verdict is
    thrown away."""
    with open(path, "rb") as handle:
        carry, left = b"\n", end
        while left > 0:
            chunk = handle.read(min(left, _CHUNK))
            if not chunk:
                return
            left -= len(chunk)
            data = carry + chunk
            cut = data.rfind(b"\n")
            at = data.find(_COMMIT_START, 0, cut + 1)
            while 0 <= at < cut:
                line_end = data.find(b"\n", at + 1)
                seq, tx = data[at + len(_COMMIT_START):line_end].split(b",", 2)[:2]
                events = _EVENTS.search(data, at, line_end)
                yield (tx.removeprefix(b'"tx":').strip(b'"').decode("utf-8", "replace"), int(seq),
                       int(events[1]) if events else 0)
                at = data.find(_COMMIT_START, line_end, cut + 1)
            carry = data[cut:]


def _torn_problem(reader: LogReader, path: Path) -> Problem | None:
    """What the log's end after its last whole transaction is, when there is one: damage in a whole line, or an
    unfinished transaction."""
    torn, seq = reader.torn, reader.position.seq
    if torn is None:
        return None
    if torn.damage is not None:
        return Problem(
            str(path), torn.damage_line, torn.damage_offset,
            f"{torn.damage}: a whole line after the last whole transaction (seq {seq}) does not read back, "
            f"so no writer appends; restore the log from a copy, or copy it and cut it at byte {torn.offset} "
            f"(truncate -s {torn.offset} {path.name}), then `playbook recover` takes back what playbook.json "
            "still holds beyond it")
    return Problem(str(path), torn.line, torn.offset,
                   f"unfinished transaction: {torn.length} bytes after the last commit "
                   "(a crash mid-write; the next writer cuts them off and keeps them)")


def _two_cores(repo: PlaybookRepository, count: _Commits) -> tuple[LogReader, PlaybookState] | None:
    """The whole log folded and checked on two cores (`eventlog.wholecheck`), `count` told its transactions:
    split at a checkpoint near its middle, each half folded by one core, or else its chain checked on the
    other core. None for a small log or when the result is not vouched for (`count` is then to be reset)."""
    middle = _middle(repo)
    if middle is not None:
        try:  # the ids of the half the child folds, first: this process sees only the other half's records
            for tx, seq, events in _commit_ids(repo.log_path, middle.position.offset):
                count.note(tx, seq, events)
            found = halves_fold(repo.log_path, middle.state, middle.position, count.add, whole=WHOLE)
        except (OSError, ValueError):
            found = None
        if found is not None:
            reader, state, before = found
            count.commits += before
            return reader, state
        count.reset()
    state = PlaybookState()
    chained = parallel_fold(repo.log_path, state, count.add, whole=WHOLE)
    return None if chained is None else (chained, state)


def _middle(repo: PlaybookRepository) -> Checkpoint | None:
    """The checkpoint nearest the log's middle (by seq, from the last checkpoint's) that still matches it."""
    directory = repo.claude_dir / CHECKPOINT_DIR
    try:
        size = repo.log_path.stat().st_size
        if size < wholecheck.PARALLEL_FROM:
            return None
        seqs = [seq for name in os.listdir(directory) if (seq := seq_of(name)) is not None]
    except OSError:
        return None
    if not seqs:
        return None
    # Seqs are not spread evenly over the bytes: one guess, then one more from where the first one fell.
    found = nearest(directory, repo.log_path, max(seqs) // 2)
    if found is not None and found.position.offset:
        better = nearest(directory, repo.log_path, found.position.seq * size // (2 * found.position.offset))
        if better is not None and abs(better.position.offset * 2 - size) < abs(found.position.offset * 2 - size):
            found = better
    return found


class _Commits:
    """Counts the transactions a fold applies, from the records it shows (commits decoded whole: `WHOLE`), and
    finds the first one it applies twice.

    Every line of a transaction's second copy can be whole and chained (a log rewritten with a recomputed chain,
    or lines copied in and re-stamped), and a fold applies it again, undoing what came after it: a key point the
    user removed comes back, a rating goes back. A transaction is written once, whatever merges, purges or
    repairs did to the log."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.commits = 0
        self.seen: dict[str, int] = {}
        """Each transaction's id and the seq of its commit line."""
        self.again: Problem | None = None

    def reset(self) -> None:
        self.commits, self.seen, self.again = 0, {}, None

    def add(self, records: list[Any]) -> None:
        commits = [record for record in records if type(record) is TransactionCommitted]
        self.commits += len(commits)
        for commit in commits:
            self.note(commit.tx, commit.seq, commit.events)

    def note(self, tx: str, seq: int, events: int) -> None:
        first = self.seen.setdefault(tx, seq)
        if first != seq and self.again is None:
            line = seq - events
            self.again = Problem(str(self.path), line, None,
                                 f"transaction {tx} again: lines {line} to {seq} repeat the one committed at line "
                                 f"{first} (a transaction replayed or copied into the log; a fold applies it again)")


def _check_snapshot(repo: PlaybookRepository, state: PlaybookState, position: Position, report: Report) -> None:
    file = str(repo.snapshot_path)
    found = read_snapshot(repo.snapshot_path)
    if found is None:
        if position.offset:
            report.problems.append(Problem(file, None, None, "missing (playbook rebuild writes it)"))
        return
    if found.error is not None:
        report.problems.append(Problem(file, None, None, found.error))
        return
    expected = render(state, position).splitlines()
    try:
        actual = repo.snapshot_path.read_bytes().splitlines()
    except OSError as exc:
        report.problems.append(Problem(file, None, None, f"unreadable: {exc.strerror or exc}"))
        return
    if found.snapshot is None and not isinstance(found.data, dict):
        report.problems.append(Problem(file, None, None, "not a JSON object (the next command moves it aside and "
                                                         "keeps it; the playbook stays as the log says)"))
        return
    if found.snapshot is None:
        line = _first_difference(actual, _claimed(repo, found.data, expected))
        report.problems.append(Problem(file, line, None, "edited by hand: its content does not match its digest"))
        return
    log = found.snapshot.log
    assert log is not None
    diverged = repo.divergence()
    if diverged is not None:
        report.problems.append(Problem(file, None, None, f"{diverged.describe()}: {HOLDS_MORE}; "
                                       "a writer keeps it as playbook.json.ahead-*, and `playbook recover` takes "
                                       "its content back into the log"))
    elif log.offset != position.offset and may_lag(found.size, log.offset, position.offset):
        pass  # a large playbook.json is rewritten once the log after it is long enough: readers fold the tail
    elif log.offset != position.offset:
        report.problems.append(Problem(file, None, None,
                                       f"behind the log: reflects seq {log.seq}, the log is at seq {position.seq} "
                                       "(harmless: a writer stopped before replacing it; the next command catches up)"))
    elif actual != expected:
        report.problems.append(Problem(file, _first_difference(actual, expected), None,
                                       "differs from the log's projection"))


def _claimed(repo: PlaybookRepository, data: object, fallback: list[bytes]) -> list[bytes]:
    """The lines the snapshot would have at the log position it claims, when that claim holds."""
    position = claimed_position(data)
    if position is None:
        return fallback
    state = fold_log(repo.log_path, PlaybookState(), until=position.offset)[0]
    return render(state, position).splitlines()


def _first_difference(actual: list[bytes], expected: list[bytes]) -> int:
    for number, (mine, theirs) in enumerate(zip(actual, expected), 1):
        if mine != theirs:
            return number
    return min(len(actual), len(expected)) + 1


def reports_divergence(report: Report) -> bool:
    """True when one of the report's problems is playbook.json holding what the log does not."""
    return any(p.file == report.snapshot and HOLDS_MORE in p.what for p in report.problems)


def only_behind(report: Report) -> bool:
    """True when the log reads whole and the one problem is a snapshot behind it, which a refresh sets right."""
    return len(report.problems) == 1 and report.problems[0].file == report.snapshot and \
        report.problems[0].what.startswith("behind the log")


def verify_anchors(repo: PlaybookRepository, report: Report) -> None:
    """Add to `report` whether the log extends every head recorded in the anchors file, or its first line that
    differs. A log that no recorded anchor covers is a problem too: there is nothing to prove it by."""
    from .anchor_proof import check
    from .anchors import AnchorFileError, anchors_path

    path = anchors_path(repo.claude_dir)
    if any(problem.file == str(repo.log_path) for problem in report.problems):
        return  # a damaged log: its first damaged line is the answer already
    try:
        result = check(repo.log_path, path)
    except AnchorFileError as exc:
        report.problems.append(Problem(str(exc.path), exc.line, None, exc.what))
        return
    except CorruptLogError as exc:
        report.problems.append(Problem(str(exc.path), exc.line, exc.offset, exc.reason))
        return
    if not result.anchors:
        report.problems.append(Problem(str(path), None, None,
                                       "no anchor recorded: `playbook anchor` records the log's head"))
        return
    if result.problem is not None:
        report.problems.append(Problem(str(repo.log_path), result.problem.line, None, result.problem.what))
        return
    report.anchors = result.anchors
    for carried in result.carried:
        many = carried.anchors != 1
        said = (f"{carried.anchors} anchor{'s' if many else ''} taken before the {carried.kind} recorded at seq "
                f"{carried.seq} {'are' if many else 'is'} carried through it")
        if not carried.anchored_since:
            said += "; the lines it wrote again are proven from the next anchor on (`playbook anchor`)"
        report.notes.append(said)
