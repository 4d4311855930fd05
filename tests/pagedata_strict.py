"""The history page's data built the way it first was: one strict `LogReader` pass, one transaction at a time.

Kept as the reference that `projections.pagedata.build` (which reads the log as the fold
does, a run of records at a time) must agree with, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from eventlog.domain import PlaybookState
from eventlog.events import KeyPointEvaluated, LearningCompleted, UnknownRecord
from eventlog.evolve import apply
from eventlog.registry import touched_names
from eventlog.store import LogReader, Transaction
from projections.pagedata import (CAUSES, OP_KINDS, RECENT_SESSIONS, SECTIONS, ChunkInfo, PageData, PageHead, UsageDay,
                                  ValuePoint, _Chunk, _Series, keyframe, safe_json)
from projections.pageops import SECTION_BIT, cause_of, label, op_of, usage_of, value_of


def build(path: Path, project: str = "", chunk_events: int = 20_000,
          progress: Callable[[int], None] | None = None) -> PageData:
    """The page data of the log at `path`, from one strict pass: transactions in chunks of at
    least `chunk_events` events, each opening with the playbook folded up to it.

    `progress` is called with the bytes read so far every chunk."""
    builder = _Builder(chunk_events, progress)
    reader = LogReader(path, strict=True)
    for transaction in reader:
        builder.add(transaction)
    return builder.finish(project, reader.position.seq)


class _Builder:
    """The page data while the log is read: the chunks so far, the folded playbook, the head's tallies."""

    def __init__(self, chunk_events: int, progress: Callable[[int], None] | None) -> None:
        self.chunk_events = chunk_events
        self.progress = progress
        self.state = PlaybookState()
        self.encoded: list[bytes] = []
        self.infos: list[ChunkInfo] = []
        self.current = _Chunk(0, 0, keyframe(self.state))
        self.summary = _Series()
        self.usage: dict[str, list[Any]] = {}
        self.value: list[ValuePoint] = []
        self.causes: dict[str, int] = dict.fromkeys(CAUSES, 0)
        self.sessions: dict[str, None] = {}
        self.total_tx = self.total_events = 0
        self.totals = [0, 0]  # the sums of helpful and of harmful over the playbook, kept as it changes

    def add(self, transaction: Transaction) -> None:
        """One transaction: its ops into the current chunk (a new one when it is full), its events applied."""
        events = transaction.events
        commit = transaction.commit
        if self.current.events >= max(self.chunk_events, 2 * len(self.state.where)):
            self._next_chunk(transaction.start.offset)
        current = self.current
        s = current.s
        ops, mask = self._ops(events, commit.at)
        cause = cause_of(commit, any(isinstance(e, LearningCompleted) for e in events))
        self.causes[cause] += 1
        if commit.session:
            self.sessions.pop(commit.session, None)
            self.sessions[commit.session] = None
        first_seq = events[0].seq if events else commit.seq
        current.transactions.append([
            commit.seq, commit.at, commit.tx, s(commit.source), cause, s(commit.session), s(commit.model),
            s(commit.analysis), s(commit.reasoning), s(commit.note), mask, ops, first_seq,
        ])
        if not current.time_from:
            current.time_from, current.seq_from = commit.at, first_seq
        current.time_to, current.seq_to = commit.at, commit.seq
        current.events += len(events)
        self.summary.after(self.total_tx, commit.at, self.state, self.totals)
        self.total_tx += 1
        self.total_events += len(events)

    def _next_chunk(self, offset: int) -> None:
        self.encoded.append(self.current.encode())
        self.infos.append(self.current.info())
        if self.progress is not None:
            self.progress(offset)
        self.current = _Chunk(len(self.infos), self.total_tx, keyframe(self.state))

    def _ops(self, events: list[Any], at: str) -> tuple[list[list[Any]], int]:
        """The ops of a transaction's events, each event applied right after its op is taken, and the mask
        of the sections they touch."""
        current = self.current
        s, index, strings = current.s, current.index, current.strings
        where, sections, totals = self.state.where, self.state.sections, self.totals
        ops: list[list[Any]] = []
        mask = 0
        for event in events:
            if type(event) is KeyPointEvaluated:  # most of any log: inlined
                name, rationale = event.name, event.rationale
                if (n := index.get(name)) is None:
                    n = index[name] = len(strings)
                    strings.append(name)
                if (r := index.get(event.rating)) is None:
                    r = s(event.rating)
                why = None
                if rationale is not None and (why := index.get(rationale)) is None:
                    why = index[rationale] = len(strings)
                    strings.append(rationale)
                ops.append(["e", n, r, event.helpful, event.harmful, why])
                if (section := where.get(name)) is not None:  # the fold's rule for a rating, as apply_records has it
                    mask |= SECTION_BIT[section]
                    kp = sections[section][name]
                    totals[0] += event.helpful - kp.helpful
                    totals[1] += event.harmful - kp.harmful
                    kp.helpful = event.helpful
                    kp.harmful = event.harmful
                continue
            if isinstance(event, UnknownRecord):  # a newer version's record: shown, never applied
                ops.append(["x", s(label(event.type)), None, None])
                continue
            op, bits = op_of(event, s, where)  # before it is applied: where its entries were
            self._apply(event)
            ops.append(op)
            mask |= bits
            if op[0] == "x":
                self._count_usage(event, at)
                if (point := value_of(event)) is not None:
                    self.value.append(ValuePoint(*point))
        return ops, mask

    def _apply(self, event: Any) -> None:
        """Apply `event` to the playbook, keeping the sums of its counters."""
        names = touched_names(event)
        before = _counters(self.state, names)
        apply(self.state, event)
        after = _counters(self.state, names)
        self.totals[0] += after[0] - before[0]
        self.totals[1] += after[1] - before[1]

    def _count_usage(self, event: Any, at: str) -> None:
        if (used := usage_of(event)) is not None:
            day = self.usage.setdefault(at[:10], [0, 0, 0, 0.0])
            day[0] += 1
            day[1] += used[0]
            day[2] += used[1]
            day[3] += used[2]

    def finish(self, project: str, seq: int) -> PageData:
        """The head and the chunks, the last chunk closed."""
        if self.current.transactions or not self.encoded:
            self.encoded.append(self.current.encode())
            self.infos.append(self.current.info())
        state = self.state
        points = self.summary.finish(state, self.totals)
        head = PageHead(
            format=1, project=project, generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            sections=list(SECTIONS), transactions=self.total_tx, events=self.total_events, seq=seq,
            version=state.version, chunks=self.infos, now=keyframe(state), summary=points,
            usage=[UsageDay(day, *values) for day, values in sorted(self.usage.items())],
            sessions=list(reversed(self.sessions))[:RECENT_SESSIONS], causes=self.causes, ops=OP_KINDS,
            value=self.value,
        )
        return PageData(head=head, head_json=safe_json(head), chunks=self.encoded)


def _counters(state: PlaybookState, names: Iterable[str]) -> tuple[int, int]:
    helpful = harmful = 0
    for name in names:
        kp = state.get(name)
        if kp is not None:
            helpful += kp.helpful
            harmful += kp.harmful
    return helpful, harmful
