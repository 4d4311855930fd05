"""Anchors: heads of the log's chain recorded in a file kept apart from the log, and the proof that the log extends them.

The chain alone finds damage, not a deliberate rewrite: whoever can write the log can
recompute every `h` after the lines they change. An anchor is a head (the chain value
after a commit line) written to `.claude/playbook.anchors`, a file meant to be committed
to git or copied somewhere the log's writer cannot reach. `check` proves the log still
(`projections.anchor_proof`) holds every recorded head, so a rewrite with a recomputed chain is caught.

Each anchor also keeps a 16-bit tag of every line since the anchor before it (the first
four digits of the line's `h`), so a log that no longer holds a head is reported at its
first line that differs, not only at the anchored line. A line's tag depends on every byte
before it, so from the first changed line on all tags differ (but one in 65,536 by chance).
The tags only locate; the head is the proof, so each anchor is checked on its own and the
file is a set of lines: the union of two copies of it (a git merge) is as good as either.

Two acts rewrite lines on purpose, and an anchor taken before one of them is carried
through its record instead of held:

- a purge appends an anchor naming its `HistoryRewritten` record, the head before it and
  the heads of the anchors whose lines it rewrote. Those are accepted while that anchor is
  (held, with its record in the log), never through the record alone, which whoever
  rewrote the log could have written;
- a merge writes each side's transactions after the history both share again, closed by a
  `BranchesMerged` record: an anchor of a side past that shared history, before the record,
  is carried through it once the lines it tagged inside the shared history still match. The
  lines a merge wrote again are proven by the first anchor taken after it.
"""

from __future__ import annotations

import base64
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from eventlog.errors import CorruptLogError, PlaybookError
from eventlog.events import BranchesMerged, HistoryRewritten
from eventlog.logformat import COMMIT, DECODE_ERRORS, decode_line, hash_after, split_hash
from eventlog.store import LogReader, Position

from .quickroads import read_capped

ANCHORS_NAME = "playbook.anchors"
TAG_BYTES = 2
_REWRITE = b'{"type":"HistoryRewritten"'
_MERGE = b'{"type":"BranchesMerged"'
_CONFLICT_MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")


class Anchor(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One recorded head: the log's commit line `line` (seq `seq`), ending at byte `offset`, and the chain after it."""

    line: int
    seq: int
    offset: int
    head: str
    at: str
    from_line: int
    """The first line whose tag `tags` holds: the line after the last anchor the log held when this one was taken."""
    tags: str
    """Base64 of two bytes per line from `from_line` to `line`: the first four hex digits of each line's `h`."""
    rewrite: int | None = None
    """The seq of the `HistoryRewritten` record this anchor accepts (written by purge)."""
    before: str | None = None
    """A purge's: the log's head before it rewrote the log (its record's `head_before`)."""
    carries: list[str] | None = None
    """A purge's: the heads of the anchors whose lines it rewrote, accepted from then on through this anchor.
    Absent in purge anchors written before it: those carry every anchor above them in the file from `from_line`."""


class Differs(msgspec.Struct, frozen=True):
    """Where the log stops extending the anchors: its first line that differs, and the head it breaks."""

    line: int
    anchor_line: int
    anchor_at: str
    what: str


class Carried(msgspec.Struct, frozen=True):
    """Anchors the log no longer holds, accepted through the record at seq `seq` (a purge's or a merge's)."""

    kind: Literal["purge", "merge"]
    seq: int
    anchors: int
    anchored_since: bool
    """Whether an anchor the log holds lies past the record, proving the lines it wrote."""


class AnchorReport(msgspec.Struct):
    path: str
    anchors: int = 0
    lines: int = 0
    rewrites: list[int] = []
    carried: list[Carried] = []
    held: dict[str, int] = {}
    """The head -> line of every anchor the log holds as it is."""
    problem: Differs | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


class AnchorFileError(PlaybookError):
    """The anchors file cannot be read: its path, line (None for the whole file), why, and what to do."""

    def __init__(self, path: Path, line: int | None, reason: str, fix: str = "") -> None:
        self.path, self.line, self.reason = path, line, reason
        self.fix = fix or (f"restore it from git (`git checkout -- {_shown(path)}`) or the copy you keep; moved aside, "
                           f"`playbook anchor` starts a new one")
        where = f"{path}" if line is None else f"{path}: line {line}"
        super().__init__(f"{where}: {reason}; {self.fix}")

    @property
    def what(self) -> str:
        """The reason and the fix, for a report that names the file and line itself."""
        return f"{self.reason}; {self.fix}"


def _shown(path: Path) -> str:
    """The anchors file as a git path from the project's top, where it usually is."""
    return f"{path.parent.name}/{path.name}" if path.parent.name == ".claude" else str(path)


_anchor_decoder = msgspec.json.Decoder(Anchor)
encoder = msgspec.json.Encoder()
"""Encodes an anchor as its line in the file."""


def anchors_path(claude_dir: Path) -> Path:
    return Path(claude_dir) / ANCHORS_NAME


MAX_ANCHORS_BYTES = 64 << 20
"""The largest anchors file read: two bytes a line since the previous anchor, so tens of millions of lines."""


def read_anchors(path: Path) -> list[Anchor]:
    """The anchors recorded in `path`, in the file's order ([] when there is no file). Raises `AnchorFileError`
    at the first line that is not an anchor.

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
        if line.startswith(_CONFLICT_MARKERS):
            raise AnchorFileError(path, number, "a git conflict marker",
                                  "keep every anchor line of both sides (the file is a set of lines) and delete the "
                                  "markers; `playbook share` has git merge this file that way itself")
        try:
            anchor = _anchor_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise AnchorFileError(path, number, f"not an anchor ({exc})") from exc
        _tags(path, number, anchor)
        anchors.append(anchor)
    return anchors


def _tags(path: Path, number: int, anchor: Anchor) -> bytes:
    try:
        tags = base64.b64decode(anchor.tags, validate=True)
    except ValueError as exc:
        raise AnchorFileError(path, number, "its tags are not base64") from exc
    if anchor.from_line < 1 or len(tags) != (anchor.line - anchor.from_line + 1) * TAG_BYTES:
        raise AnchorFileError(path, number, "its tags do not cover its lines")
    return tags


class LogLines(msgspec.Struct):
    """The log's whole lines as the anchors see them: each line's tag, each commit line's end and head, and the
    records that rewrote lines on purpose (purges' and merges')."""

    tags: bytes
    commits: dict[int, tuple[int, str]]
    """line number -> (byte after it, the chain value after it)."""
    end: Position
    rewrites: dict[int, HistoryRewritten]
    merges: dict[int, BranchesMerged]


def log_lines(log: Path) -> LogLines:
    """Read the log strictly (every `h` checked; `CorruptLogError` on damage) and take each line's tag."""
    reader = LogReader(log, strict=True)
    end = Position()
    for transaction in reader:
        end = transaction.end
    tags = bytearray()
    commits: dict[int, tuple[int, str]] = {}
    rewrites: dict[int, HistoryRewritten] = {}
    merges: dict[int, BranchesMerged] = {}
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
            elif line.startswith((_REWRITE, _MERGE)):
                try:
                    record = decode_line(line)
                except DECODE_ERRORS:  # pragma: no cover - the strict read decoded it
                    continue
                if isinstance(record, HistoryRewritten):
                    rewrites[record.seq] = record
                elif isinstance(record, BranchesMerged):
                    merges[record.seq] = record
    return LogLines(tags=bytes(tags), commits=commits, end=end, rewrites=rewrites, merges=merges)


def carriers(anchors: list[Anchor]) -> dict[str, list[Anchor]]:
    """head -> the purge anchors that carry the anchor of that head."""
    carriers: dict[str, list[Anchor]] = {}
    for number, anchor in enumerate(anchors):
        if anchor.rewrite is None:
            continue
        if anchor.carries is not None:
            heads: Iterable[str] = anchor.carries
        else:
            heads = [above.head for above in anchors[:number] if above.line >= anchor.from_line]
        for head in heads:
            carriers.setdefault(head, []).append(anchor)
    return carriers


def anchored_tag(path: Path, line: int) -> bytes | None:
    """The tag the anchors in `path` hold for the log's line `line`, or None when none covers it or they disagree
    (anchors of two histories, as a merge of the file holds). Anchors a purge's anchor carries are left out: the
    purge rewrote their lines. Raises `AnchorFileError` when the file is damaged."""
    anchors = read_anchors(path)
    rewritten = {head for head in carriers(anchors)}
    found: set[bytes] = set()
    for anchor in anchors:
        if anchor.head in rewritten or not anchor.from_line <= line <= anchor.line:
            continue
        at = (line - anchor.from_line) * TAG_BYTES
        found.add(base64.b64decode(anchor.tags)[at : at + TAG_BYTES])
    return found.pop() if len(found) == 1 else None


def line_tag(raw: bytes) -> bytes | None:
    """A log line's tag as an anchor keeps it (the first four digits of its `h`), or None when it has no `h`."""
    hashed = split_hash(raw)
    return None if hashed is None else bytes.fromhex(hashed[1][: 2 * TAG_BYTES].decode())


def merge_files(ancestor: bytes, ours: bytes, theirs: bytes) -> bytes:
    """Two copies of an anchors file merged as git merges them: every line of either, each once, ours' first in
    their order, then theirs'; a line of the ancestor one side removed stays removed. Lines are not judged here:
    one that is not an anchor stays for `check` to name."""
    base = set(_lines(ancestor))
    ours_lines, theirs_lines = _lines(ours), _lines(theirs)
    removed = (base - set(ours_lines)) | (base - set(theirs_lines))
    merged: dict[bytes, None] = {}
    for line in [*ours_lines, *theirs_lines]:
        if line not in removed:
            merged.setdefault(line, None)
    return b"".join(line + b"\n" for line in merged)


def _lines(data: bytes) -> list[bytes]:
    return [line.rstrip(b"\r") for line in data.splitlines() if line.strip()]


__all__ = ["ANCHORS_NAME", "Anchor", "AnchorFileError", "AnchorReport", "Carried", "CorruptLogError", "Differs",
           "anchored_tag", "anchors_path", "carriers", "line_tag", "log_lines", "merge_files", "read_anchors"]
