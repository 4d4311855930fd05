"""Anchors: heads of the log's chain recorded in a file kept apart from the log, and the proof that the log extends them.

The chain alone finds damage, not a deliberate rewrite: whoever can write the log can
recompute every `h` after the lines they change. An anchor is a head (the chain value
after a commit line) written to `.claude/playbook.anchors`, a file meant to be committed
to git or copied somewhere the log's writer cannot reach. `check` proves the log still
extends every recorded head, so a rewrite with a recomputed chain is caught.

Each anchor also keeps a 16-bit tag of every line since the anchor before it (the first
four digits of the line's `h`), so a log that no longer extends a head is reported at its
first line that differs, not only at the anchored line. A line's tag depends on every byte
before it, so from the first changed line on all tags differ (but one in 65,536 by chance).

A purge rewrites lines on purpose: it appends an anchor naming its `HistoryRewritten`
record, whose tags replace those from the first rewritten line on. Earlier heads past that
line are then accepted through that record only.
"""

from __future__ import annotations

import base64
import errno
import os
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from eventlog.errors import CorruptLogError
from eventlog.safefiles import create, directory, write_all
from eventlog.events import HistoryRewritten
from eventlog.logformat import COMMIT, DECODE_ERRORS, decode_line, hash_after, split_hash
from eventlog.store import LogReader, Position

from .quickroads import read_capped

ANCHORS_NAME = "playbook.anchors"
TAG_BYTES = 2


class Anchor(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One recorded head: the log's commit line `line` (seq `seq`), ending at byte `offset`, and the chain after it."""

    line: int
    seq: int
    offset: int
    head: str
    at: str
    from_line: int
    """The first line whose tag `tags` holds; the lines before it are the earlier anchors'."""
    tags: str
    """Base64 of two bytes per line from `from_line` to `line`: the first four hex digits of each line's `h`."""
    rewrite: int | None = None
    """The seq of the `HistoryRewritten` record this anchor accepts (written by purge)."""


class Differs(msgspec.Struct, frozen=True):
    """Where the log stops extending the anchors: its first line that differs, and the head it breaks."""

    line: int
    anchor_line: int
    anchor_at: str
    what: str


class AnchorReport(msgspec.Struct):
    path: str
    anchors: int = 0
    lines: int = 0
    rewrites: list[int] = []
    problem: Differs | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


class AnchorFileError(Exception):
    """The anchors file cannot be read: its path, line (None for the whole file) and why."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if line is None else f"{path}: line {line}: {reason}")
        self.path, self.line, self.reason = path, line, reason


_anchor_decoder = msgspec.json.Decoder(Anchor)
_encoder = msgspec.json.Encoder()


def anchors_path(claude_dir: Path) -> Path:
    return Path(claude_dir) / ANCHORS_NAME


MAX_ANCHORS_BYTES = 64 << 20
"""The largest anchors file read: two bytes a line since the previous anchor, so tens of millions of lines."""


def read_anchors(path: Path) -> list[Anchor]:
    """The anchors recorded in `path`, oldest first ([] when there is no file).

    A regular file of at most MAX_ANCHORS_BYTES only, opened without blocking and never through a link: a
    clone can ship the name as a FIFO (an open that never returns), a link to /dev/zero (a read without
    end), a directory or a sparse file of gigabytes. `AnchorFileError` says which, in one line."""
    try:
        raw = read_capped(str(path), MAX_ANCHORS_BYTES, os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        reason = "it is a link; the anchors are read from a file in .claude only" if exc.errno == errno.ELOOP \
            else f"cannot be read: {exc.strerror or exc}"
        raise AnchorFileError(path, None, reason) from exc
    if raw is None:
        regular = stat.S_ISREG(os.lstat(path).st_mode)
        raise AnchorFileError(path, None, f"larger than {MAX_ANCHORS_BYTES >> 20} MiB, more than any anchors file holds" if regular
                              else "not a regular file")
    anchors = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            anchors.append(_anchor_decoder.decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise AnchorFileError(path, number, f"not an anchor: {exc}") from exc
    return anchors


class LogLines(msgspec.Struct):
    """The log's whole lines as the anchors see them: each line's tag, and each commit line's end and head."""

    tags: bytes
    commits: dict[int, tuple[int, str]]
    """line number -> (byte after it, the chain value after it)."""
    end: Position


def log_lines(log: Path) -> LogLines:
    """Read the log strictly (every `h` checked; `CorruptLogError` on damage) and take each line's tag."""
    reader = LogReader(log, strict=True)
    end = Position()
    for transaction in reader:
        end = transaction.end
    tags = bytearray()
    commits: dict[int, tuple[int, str]] = {}
    offset = 0
    with open(log, "rb") as handle:
        for number, line in enumerate(handle, 1):
            offset += len(line)
            if offset > end.offset:
                break
            tag = line_tag(line)
            assert tag is not None  # the strict read checked every line
            tags += tag
            if line.startswith(COMMIT):
                commits[number] = (offset, hash_after(line))
    return LogLines(tags=bytes(tags), commits=commits, end=end)


def check(log: Path, path: Path) -> AnchorReport:
    """Prove the log extends every head recorded in `path`, or name its first line that differs.

    A head past the first line a purge rewrote is accepted only through the purge's anchor and
    its `HistoryRewritten` record in the log. Raises `CorruptLogError` when the log is damaged
    and `AnchorFileError` when the anchors file is."""
    anchors = read_anchors(path)
    report = AnchorReport(path=str(path), anchors=len(anchors), rewrites=[])
    if not anchors:
        return report
    expected, heads = _expected(path, anchors, report.rewrites)
    lines = log_lines(log)
    report.lines = lines.end.line
    report.problem = _first_difference(lines, bytes(expected), heads)
    if report.problem is None:
        report.problem = _unaccepted_rewrite(log, anchors)
    return report


def anchored_tag(path: Path, line: int) -> bytes | None:
    """The tag the anchors in `path` hold for the log's line `line` (after any purge they accepted), or None
    when none covers it. Raises `AnchorFileError` when the file is damaged."""
    expected, _heads = _expected(path, read_anchors(path), [])
    at = (line - 1) * TAG_BYTES
    return bytes(expected[at : at + TAG_BYTES]) if line >= 1 and at + TAG_BYTES <= len(expected) else None


def line_tag(raw: bytes) -> bytes | None:
    """A log line's tag as an anchor keeps it (the first four digits of its `h`), or None when it has no `h`."""
    hashed = split_hash(raw)
    return None if hashed is None else bytes.fromhex(hashed[1][: 2 * TAG_BYTES].decode())


def _expected(path: Path, anchors: list[Anchor], rewrites: list[int]) -> tuple[bytearray, dict[int, Anchor]]:
    """The tag every anchored line must have, and the heads still to prove, the anchors read in order (a purge's
    anchor replaces the tags from its first line on); the purges' record seqs are added to `rewrites`."""
    expected = bytearray()
    heads: dict[int, Anchor] = {}
    for number, anchor in enumerate(anchors, 1):
        try:
            tags = base64.b64decode(anchor.tags, validate=True)
        except ValueError as exc:
            raise AnchorFileError(path, number, "its tags are not base64") from exc
        if len(tags) != (anchor.line - anchor.from_line + 1) * TAG_BYTES or anchor.from_line < 1:
            raise AnchorFileError(path, number, "its tags do not cover its lines")
        if anchor.from_line - 1 > len(expected) // TAG_BYTES:
            raise AnchorFileError(path, number, f"it begins at line {anchor.from_line}, after a gap")
        if anchor.rewrite is not None:
            heads = {line: kept for line, kept in heads.items() if line < anchor.from_line}
            rewrites.append(anchor.rewrite)
        elif expected[(anchor.from_line - 1) * TAG_BYTES :] != tags[: len(expected) - (anchor.from_line - 1) * TAG_BYTES]:
            raise AnchorFileError(path, number, "it disagrees with the anchors before it")
        del expected[(anchor.from_line - 1) * TAG_BYTES :]
        expected += tags
        heads[anchor.line] = anchor
    return expected, heads


def _first_difference(lines: LogLines, expected: bytes, heads: dict[int, Anchor]) -> Differs | None:
    ordered = sorted(heads.values(), key=lambda anchor: anchor.line)
    found = lines.tags
    for at in range(0, min(len(found), len(expected)), TAG_BYTES):
        if found[at : at + TAG_BYTES] != expected[at : at + TAG_BYTES]:
            line = at // TAG_BYTES + 1
            anchor = next(a for a in ordered if a.line >= line)
            return Differs(line, anchor.line, anchor.at,
                           f"line {line} (seq {line}) is not the line that was anchored: the log no longer extends "
                           f"the head recorded at line {anchor.line} on {anchor.at}")
    for anchor in ordered:
        commit = lines.commits.get(anchor.line)
        if commit is None:
            last = lines.end.line
            return Differs(min(last + 1, anchor.line), anchor.line, anchor.at,
                           f"the log ends at line {last}, before the head recorded at line {anchor.line} on "
                           f"{anchor.at}: lines were cut")
        if commit != (anchor.offset, anchor.head):
            return Differs(anchor.line, anchor.line, anchor.at,
                           f"line {anchor.line} (seq {anchor.line}) does not end with the head recorded on "
                           f"{anchor.at}: the log no longer extends it")
    return None


def _unaccepted_rewrite(log: Path, anchors: list[Anchor]) -> Differs | None:
    """A purge's anchor must name its `HistoryRewritten` record, and that record the lines the anchor rewrote."""
    for anchor in anchors:
        if anchor.rewrite is None:
            continue
        record = _record_at(log, anchor.rewrite)
        if type(record) is not HistoryRewritten or not record.seqs or record.seqs[0] != anchor.from_line:
            return Differs(anchor.from_line, anchor.line, anchor.at,
                           f"the rewrite anchored on {anchor.at} from line {anchor.from_line} has no "
                           f"HistoryRewritten record at seq {anchor.rewrite} naming that line")
    return None


def _record_at(log: Path, seq: int) -> Any:
    """The record of seq `seq` (the log's line `seq`: seqs count lines), or None."""
    with open(log, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if number == seq:
                try:
                    return decode_line(line)
                except DECODE_ERRORS:
                    return None
    return None


def record(log: Path, path: Path, rewrite: int | None = None, from_line: int | None = None,
           root: Path | None = None) -> Anchor | None:
    """Append the log's current head to `path` (None when it is anchored already).

    Follows no link below `root` (by default the directory above the `.claude` that holds `path`). The
    caller holds the log's lock, so the head is the log's end. The log must extend every anchor recorded
    so far (`check`): an anchor never blesses a rewrite. `rewrite` and `from_line` are a purge's: its
    record's seq and the first line it rewrote."""
    anchors = read_anchors(path)
    lines = log_lines(log)
    end = lines.end
    if not end.line:
        return None
    if rewrite is None:
        report = check(log, path)
        if report.problem is not None:
            raise AnchoredLogDiffers(report.problem)
        if anchors and anchors[-1].line == end.line:
            return None
    first = from_line if from_line is not None else (max((a.line for a in anchors), default=0) + 1)
    anchor = Anchor(line=end.line, seq=end.seq, offset=end.offset, head=end.hash,
                    at=datetime.now(timezone.utc).isoformat(timespec="seconds"), from_line=first,
                    tags=base64.b64encode(lines.tags[(first - 1) * TAG_BYTES :]).decode(), rewrite=rewrite)
    with directory(path.parent, root if root is not None else path.parent.parent, create=True) as dir_fd:
        fd = create(dir_fd, path.name, append=True)
    try:
        write_all(fd, _encoder.encode(anchor) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return anchor


class AnchoredLogDiffers(Exception):
    """The log no longer extends a recorded anchor."""

    def __init__(self, problem: Differs) -> None:
        super().__init__(problem.what)
        self.problem = problem


__all__ = ["ANCHORS_NAME", "Anchor", "AnchorFileError", "AnchorReport", "AnchoredLogDiffers", "CorruptLogError",
           "Differs", "anchored_tag", "anchors_path", "check", "line_tag", "read_anchors", "record"]
