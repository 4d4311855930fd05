"""The proof that a log extends its anchors (`projections.anchors`): each anchor held, or carried through a recorded
purge or merge, else the first line that differs; and a new anchor recorded only after that proof."""

from __future__ import annotations

import base64
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from eventlog.errors import PlaybookError
from eventlog.safefiles import create, directory, write_all

from .anchors import (TAG_BYTES, Anchor, AnchorReport, Carried, Differs, LogLines, carriers, encoder, log_lines,
                      read_anchors)


def check(log: Path, path: Path) -> AnchorReport:
    """Prove the log holds every head recorded in `path`, or carries it through a recorded purge or merge; else
    name its first line that differs. Raises `CorruptLogError` when the log is damaged and `AnchorFileError`
    when the anchors file is."""
    anchors = read_anchors(path)
    report = AnchorReport(path=str(path), anchors=len(anchors), rewrites=[], carried=[], held={})
    if not anchors:
        return report
    lines = log_lines(log)
    report.lines = lines.end.line
    _Proof(anchors, lines, report).run()
    return report


_PENDING = Differs(0, 0, "", "an anchor whose verdict waits on itself")
Verdict = tuple[Literal["held", "purge", "merge"], int] | Differs
"""How an anchor stands: held by the log at its line, carried through the record of that seq, or where it differs."""


class _Proof:
    """Each anchor's verdict: held by the log, carried through a record, or the first line where it differs."""

    def __init__(self, anchors: list[Anchor], lines: LogLines, report: AnchorReport) -> None:
        self.anchors, self.lines, self.report = anchors, lines, report
        self.held = {id(anchor) for anchor in anchors if lines.commits.get(anchor.line) == (anchor.offset, anchor.head)}
        self.carriers = carriers(anchors)
        self.verdicts: dict[int, Verdict] = {}

    def run(self) -> None:
        problems = [verdict for anchor in self.anchors if isinstance(verdict := self.verdict(anchor), Differs)]
        self.report.held = {anchor.head: anchor.line for anchor in self.anchors if id(anchor) in self.held}
        self.report.rewrites = sorted({a.rewrite for a in self.anchors if a.rewrite is not None and id(a) in self.held})
        if problems:
            self.report.problem = min(problems, key=lambda differs: (differs.line, differs.anchor_line))
            return
        counted: dict[tuple[Literal["purge", "merge"], int], int] = {}
        for verdict in self.verdicts.values():
            if isinstance(verdict, tuple) and verdict[0] != "held":
                counted[(verdict[0], verdict[1])] = counted.get((verdict[0], verdict[1]), 0) + 1
        newest_held = max(self.report.held.values(), default=0)
        self.report.carried = [Carried(kind, seq, count, newest_held > seq)
                               for (kind, seq), count in sorted(counted.items(), key=lambda item: item[0][1])]

    def verdict(self, anchor: Anchor) -> Verdict:
        """("held", line), ("purge", record seq) or ("merge", record seq) when the anchor stands, else where the
        log differs from it. An anchor met again while its own verdict is pending (a loop in a damaged file)
        stands on nothing."""
        key = id(anchor)
        if key in self.verdicts:
            return self.verdicts[key]
        self.verdicts[key] = _PENDING
        found = self._decide(anchor)
        self.verdicts[key] = found
        return found

    def _decide(self, anchor: Anchor) -> Verdict:
        if id(anchor) in self.held:
            if anchor.rewrite is not None and (problem := self._unaccepted_rewrite(anchor)) is not None:
                return problem
            return ("held", anchor.line)
        for seq, merge in sorted(self.lines.merges.items()):
            if merge.shared_seq < anchor.line < seq and self._first_tag_differing(anchor, merge.shared_seq) is None:
                return ("merge", seq)
        for carrier in self.carriers.get(anchor.head, []):
            if carrier is not anchor and not isinstance(self.verdict(carrier), Differs):
                assert carrier.rewrite is not None
                return ("purge", carrier.rewrite)
        return self._differs(anchor)

    def _first_tag_differing(self, anchor: Anchor, until: int) -> int | None:
        """The first line from the anchor's `from_line` to `until` (and the log's end) whose tag is not the one the
        anchor recorded."""
        last = min(anchor.line, until, self.lines.end.line)
        if last < anchor.from_line:
            return None
        count = (last - anchor.from_line + 1) * TAG_BYTES
        found = self.lines.tags[(anchor.from_line - 1) * TAG_BYTES :][:count]
        tags = base64.b64decode(anchor.tags)[:count]
        if found == tags:
            return None
        return anchor.from_line + next(at for at in range(0, count, TAG_BYTES)
                                       if found[at : at + TAG_BYTES] != tags[at : at + TAG_BYTES]) // TAG_BYTES

    def _differs(self, anchor: Anchor) -> Differs:
        line = self._first_tag_differing(anchor, anchor.line)
        if line is not None:
            return Differs(line, anchor.line, anchor.at,
                           f"line {line} (seq {line}) is not the line that was anchored: the log no longer extends "
                           f"the head recorded at line {anchor.line} on {anchor.at}")
        last = self.lines.end.line
        if anchor.line > last:
            return Differs(min(last + 1, anchor.line), anchor.line, anchor.at,
                           f"the log ends at line {last}, before the head recorded at line {anchor.line} on "
                           f"{anchor.at}: lines were cut")
        return Differs(anchor.line, anchor.line, anchor.at,
                       f"line {anchor.line} (seq {anchor.line}) does not end with the head recorded on {anchor.at}: "
                       f"the log no longer extends it")

    def _unaccepted_rewrite(self, anchor: Anchor) -> Differs | None:
        """A purge's anchor must name its `HistoryRewritten` record, and that record the lines the anchor tagged,
        the head before it the anchor recorded, and the head the log has before it."""
        assert anchor.rewrite is not None
        record = self.lines.rewrites.get(anchor.rewrite)
        if (record is None or not record.seqs or record.seqs[0] < anchor.from_line
                or (anchor.before is not None and record.head_before != anchor.before)
                or self.lines.commits.get(anchor.rewrite - 1, (0, ""))[1] != record.head_after):
            return Differs(anchor.from_line, anchor.line, anchor.at,
                           f"the rewrite anchored on {anchor.at} from line {anchor.from_line} has no "
                           f"HistoryRewritten record at seq {anchor.rewrite} naming that line")
        return None


def record(log: Path, path: Path, rewrite: int | None = None, before: str | None = None,
           carries: list[str] | None = None, root: Path | None = None) -> Anchor | None:
    """Append the log's current head to `path` (None when an anchor the log holds is at its head already).

    Follows no link below `root` (by default the directory above the `.claude` that holds `path`). The
    caller holds the log's lock, so the head is the log's end. The log must hold or carry every anchor
    recorded so far (`check`): an anchor never blesses a rewrite. `rewrite`, `before` and `carries` are a
    purge's, which checked that before it rewrote the log: its record's seq, the head before it, and the
    heads of the anchors whose lines it rewrote."""
    anchors = read_anchors(path)
    lines = log_lines(log)
    end = lines.end
    if not end.line:
        return None
    held = [anchor.line for anchor in anchors if lines.commits.get(anchor.line) == (anchor.offset, anchor.head)]
    if rewrite is None:
        report = AnchorReport(path=str(path), anchors=len(anchors), rewrites=[], carried=[], held={})
        _Proof(anchors, lines, report).run()
        if report.problem is not None:
            raise AnchoredLogDiffers(report.problem)
        if end.line in held:
            return None
    first = max(held, default=0) + 1
    anchor = Anchor(line=end.line, seq=end.seq, offset=end.offset, head=end.hash,
                    at=datetime.now(timezone.utc).isoformat(timespec="seconds"), from_line=first,
                    tags=base64.b64encode(lines.tags[(first - 1) * TAG_BYTES :]).decode(), rewrite=rewrite,
                    before=before, carries=carries)
    with directory(path.parent, root if root is not None else path.parent.parent, create=True) as dir_fd:
        fd = create(dir_fd, path.name, append=True)
    try:
        write_all(fd, encoder.encode(anchor) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return anchor


class AnchoredLogDiffers(PlaybookError):
    """The log no longer extends a recorded anchor."""

    def __init__(self, problem: Differs) -> None:
        super().__init__(problem.what)
        self.problem = problem
