"""Purging text from the log's history: the lines holding it rewritten, the chain re-stamped, the rewrite recorded.

Under the writers' lock, the new log is written beside the old one: every line up to the
first changed one as it is, each line from there with its text redacted where needed and
its `h` stamped again, then one transaction holding a `HistoryRewritten` record (which
seqs, why, the chain heads before and after). It is `fsync`ed and renamed over the log in
one step, so a kill at any moment leaves the old log or the new one, never a mix. Writers
wait on the lock meanwhile; readers see one file or the other. Then the derived files
(playbook.json, the hook's projection, the recall index, the checkpoints) are rebuilt from
the new log, and a purge anchor is recorded when the project keeps anchors: it names the record and the
anchors whose lines were rewritten, which are accepted through it from then on.

What to redact is the caller's: a function from a text to (the redacted text, redactions).
Structural fields (type, seq, tx, at) are never touched.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import msgspec

from eventlog.errors import CorruptLogError, PlaybookError
from eventlog.events import Cause, HistoryRewritten
from eventlog.faults import point as fault
from eventlog.safefiles import create, directory, link, open_dir, remove, replace, write_all
from eventlog.logformat import COMMIT, CRC_DIGITS, Running, check_line, encoded, hash_after, split_hash, stamp, start
from eventlog.positions import Position
from eventlog.store import LogReader
from eventlog.storage import commit_record, new_transaction

from .quickroads import CHECKPOINT_DIR, SHOW_NAME
from . import anchor_proof, anchors, checkpoints
from .repository import PlaybookRepository

Redact = Callable[[str], tuple[str, int]]
"""A text -> (the text with what is purged replaced, how many replacements)."""

STRUCTURAL = frozenset({"type", "seq", "tx", "at", "h"})
TEMP_SUFFIX = ".purging"


class Purged(msgspec.Struct, frozen=True):
    """What a purge did: the rewritten seqs, how many redactions, the heads, and where things went."""

    seqs: list[int]
    redactions: int
    head_before: str
    head_after: str
    record_seq: int | None = None
    kept_original: str | None = None
    anchored: bool = False


class _Walk:
    def __init__(self, redact: Redact) -> None:
        self.redact = redact
        self.count = 0

    def value(self, value: object) -> object:
        if isinstance(value, str):
            new, count = self.redact(value)
            self.count += count
            return new
        if isinstance(value, dict):
            return {self.value(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


def redact_prefix(prefix: bytes, redact: Redact) -> tuple[bytes, int]:
    """A line's hashed part with its texts redacted, and how many redactions (0: `prefix` itself)."""
    record = msgspec.json.decode(prefix + b"}")
    walk = _Walk(redact)
    changed = {key: value if key in STRUCTURAL else walk.value(value) for key, value in record.items()}
    if not walk.count:
        return prefix, 0
    return msgspec.json.encode(changed)[:-1], walk.count


def rewrite(data: bytes, redact: Redact) -> tuple[bytes, list[int], int]:
    """Whole lines of a log (checked) with their texts redacted and the chain re-stamped from the first changed
    line: (the new bytes, the changed lines' seqs, redactions). Lines before the first change keep their bytes;
    each line keeps its format (an old CRC-32 line stays one, so the SHA-256 part begins where it began)."""
    out: list[bytes] = []
    changed: list[int] = []
    redactions = 0
    running: Running = 0
    opens = True
    restamping = False
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        hashed = split_hash(line)
        assert hashed is not None  # the caller read the log strictly
        prefix, digits = hashed
        new_prefix, count = redact_prefix(prefix, redact)
        if count:
            changed.append(number)
            redactions += count
            restamping = True
        if restamping:
            new_line, running = stamp(new_prefix, running, crc=len(digits) == CRC_DIGITS)
            out.append(new_line)
        else:
            after = check_line(line.rstrip(b"\n"), running, opens)
            assert after is not None
            running = after
            out.append(line)
        opens = line.startswith(COMMIT)
    return b"".join(out), changed, redactions


def purge(repo: PlaybookRepository, redact: Redact, reason: Literal["secrets", "match"], keep_original: Path | None = None,
          progress: Callable[[str], None] | None = None) -> Purged:
    """Rewrite the log without what `redact` replaces, record it, rebuild what derives from it.

    Raises `PlaybookError` (nothing changed) when the log is damaged or has an unfinished
    tail, when it no longer extends a recorded anchor, or when `keep_original` exists."""
    if keep_original is not None and (keep_original.exists() or keep_original.is_symlink()):
        raise PlaybookError(f"{keep_original} exists: give a new file for --keep-original")
    repo.state()  # take in what waits outside the log first (a hand edit, a legacy file)
    log = repo.log_path
    with repo.store.locked():
        with directory(log.parent, repo.root) as dir_fd:
            remove(dir_fd, log.name + TEMP_SUFFIX)  # a purge killed before its rename
        anchor_file = anchors.anchors_path(repo.claude_dir)
        end, held = _checked_end(log, anchor_file)
        with open(log, "rb") as handle:
            data = handle.read(end.offset)
        if progress:
            progress(f"reading {end.line} lines")
        new, seqs, redactions = rewrite(data, redact)
        if not seqs:
            return Purged(seqs=[], redactions=0, head_before=end.hash, head_after=end.hash)
        head_after = _head(new)
        tx, at = new_transaction()
        record = HistoryRewritten(seq=end.seq + 1, tx=tx, at=at, seqs=seqs, reason=reason, redactions=redactions,
                                  head_before=end.hash, head_after=head_after,
                                  kept_original=str(keep_original) if keep_original is not None else None)
        _replace_log(repo, new + _recorded(record, head_after), keep_original)
        if progress:
            progress("rebuilding playbook.json, the hook's projection, the recall index and the checkpoints")
        repo.rebuild_locked()
        anchored = False
        if held is not None:
            # Every anchor the old log held past the first rewritten line is carried by this one from now on;
            # the rest are held still, or carried by a record the rewrite kept.
            carried = [head for head, line in held.items() if line >= seqs[0]]
            anchor_proof.record(log, anchor_file, rewrite=end.seq + 1, before=end.hash, carries=carried, root=repo.root)
            anchored = True
    return Purged(seqs=seqs, redactions=redactions, head_before=end.hash, head_after=head_after,
                  record_seq=end.seq + 1, kept_original=str(keep_original) if keep_original else None,
                  anchored=anchored)


def _checked_end(log: Path, anchor_file: Path) -> tuple[Position, dict[str, int] | None]:
    """The log's end after reading every line strictly, and the head -> line of each anchor it holds (None when
    the project keeps no anchors); `PlaybookError` when it is not fit to be rewritten."""
    reader = LogReader(log, strict=True)
    end = Position()
    try:
        for transaction in reader:
            end = transaction.end
    except CorruptLogError as exc:  # a damaged log is never rewritten
        raise PlaybookError(f"the log is damaged, nothing purged: {exc}") from exc
    if reader.torn is not None:
        raise PlaybookError("the log ends with an unfinished write: run `playbook verify`, then purge again")
    try:
        report = anchor_proof.check(log, anchor_file)
    except anchors.AnchorFileError as exc:
        raise PlaybookError(f"nothing purged: {exc}") from exc
    if report.problem is not None:
        raise PlaybookError(f"the log no longer extends its anchors, nothing purged: {report.problem.what} "
                            "(`playbook verify --anchor` shows it)")
    return end, (report.held if report.anchors else None)




def _recorded(record: HistoryRewritten, head: str) -> bytes:
    """`record`'s line and its commit line: a transaction of its own, chained after `head`."""
    _written, line, running = encoded(record, start(head))
    commit = commit_record(record.seq + 1, record.tx, record.at, 1,
                           Cause(source="purge", note=f"{len(record.seqs)} line(s) rewritten"))
    _commit, commit_line, running = encoded(commit, running)
    return line + commit_line


def _replace_log(repo: PlaybookRepository, data: bytes, keep_original: Path | None) -> None:
    """The log replaced by `data` in one rename, the derived files removed first, the original kept if asked.

    Follows no link below the repository's root: the new log is written, and renamed over the old, inside
    the directory reached without one."""
    log = repo.log_path
    with directory(log.parent, repo.root) as dir_fd:
        temp = log.name + TEMP_SUFFIX
        fd = create(dir_fd, temp, exclusive=True)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fault("purge-before-rename")
        _remove_derived(repo)  # from here a kill leaves no derived file holding the old text: each is rebuilt
        if keep_original is not None:
            _keep(dir_fd, log.name, keep_original)
        replace(dir_fd, temp, log.name)
        os.fsync(dir_fd)
    fault("purge-after-rename")


def _head(data: bytes) -> str:
    """The chain value after whole lines `data` that end with a commit line."""
    return hash_after(data[data.rstrip(b"\n").rfind(b"\n") + 1 :])


def _remove_derived(repo: PlaybookRepository) -> None:
    """Remove what derives from the log (the next reader or writer rebuilds each): the checkpoints, the hook's
    projection, the recall index, playbook.json, and the text `show` keeps with the temporary ones a killed
    `show` left. Follows no link below the repository's root: a link under one of those names is removed
    itself."""
    checkpoints.clear(repo.claude_dir / CHECKPOINT_DIR, repo.root)
    derived = {path.name for path in (repo.injection_path, repo.recall_path, repo.snapshot_path)} | {SHOW_NAME}
    with directory(repo.claude_dir, repo.root) as dir_fd:
        for name in os.listdir(dir_fd):
            if name in derived or (name.startswith(f".{SHOW_NAME}.") and name.endswith(".tmp")):
                remove(dir_fd, name)
        os.fsync(dir_fd)


def _keep(log_dir: int, log_name: str, target: Path) -> None:
    """The original log at `target`, a new file the user named: a second name for the same file when it can
    be, else a copy. Follows no link: the log is taken by its name in its directory, `target` is created
    in the directory the user named, never through a link under its own name."""
    target_dir = open_dir(target.parent, target.parent)
    try:
        try:
            link(log_dir, log_name, target.name, target_dir)
            return
        except FileExistsError:
            raise
        except OSError:
            pass
        source = os.open(log_name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=log_dir)
        try:
            fd = create(target_dir, target.name, exclusive=True)
            try:
                while block := os.read(source, 1 << 20):
                    write_all(fd, block)
                os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            os.close(source)
    finally:
        os.close(target_dir)
