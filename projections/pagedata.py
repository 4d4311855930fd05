"""The data behind the history page: every transaction as compact deltas, in chunks, from one pass over the log.

One read of the log builds everything, the way the store's fold reads it
(`eventlog.fastread`: a chunk of lines decoded at once and its chain checked in bulk, the
strict reader wherever that cannot vouch for a chunk, so damage still refuses): each
transaction becomes a short array of its cause and its changes (`ops`), strings are
interned per chunk, and each chunk starts with the folded playbook before its first
transaction (a keyframe: each event is applied by the fold's rules right after its op is
taken), so the page computes the playbook at any point from one keyframe and at most one
chunk of deltas. No transaction is folded twice.

Each `ModelCallRecorded` counts as model usage: the head sums it per UTC day (input tokens
with the cache's writes and reads, output tokens, and the cost `projections.prices` gives).

Layout of one chunk (JSON): `{"n": index, "first": global index of its first transaction,
"s": [strings], "k": keyframe, "t": [transaction, ...]}`, transactions oldest first:

    [seq, at, tx, source, cause, session, model, analysis, reasoning, note, section mask, ops, first seq]

where `source`, `session`, ... are indexes into `s` (or null) and `cause` is one of CAUSES.
An op is an array whose first item names its kind (OP_KINDS); names and texts are indexes
into `s`, sections indexes into SECTIONS. A keyframe is five lists (one per section, in
order) of `[name, text, helpful, harmful]` with literal strings.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Union

import msgspec

from eventlog.domain import PlaybookState
from eventlog.events import (KeyPointEvaluated, LearningCompleted, ModelCallRecorded, TransactionCommitted,
                             UnknownRecord)
from eventlog.evolve import apply
from eventlog.fastread import RunReader
from eventlog.registry import EVENT_TYPES, touched_names
from eventlog.values import Rating

from .pageops import CAUSES, OP_KINDS, SECTION_BIT, SECTIONS, Cause, cause_of, causes_of, label, op_of, usage_of
from .pageshapes import ChunkInfo, PageData, PageHead, SummaryPoint, UsageDay, keyframe, safe_json

__all__ = [  # the op encoding is used through the page data by its readers
    "CAUSES", "OP_KINDS", "SECTIONS", "Cause", "ChunkInfo", "PageData", "PageHead", "SummaryPoint", "UsageDay",
    "build", "cause_of", "keyframe", "label", "safe_json",
]

CHUNK_EVENTS = 20_000
"""Events per chunk, at least: small enough that the newest chunk parses at once, large enough
that keyframes stay a small part of the page."""
SUMMARY_POINTS = 200
"""Samples of the summary's series, at most (plus the last transaction)."""
RECENT_SESSIONS = 300


class _Chunk:
    """One chunk being built: its string table and transactions."""

    def __init__(self, n: int, first: int, frame: list[list[list[Any]]]) -> None:
        self.n = n
        self.first = first
        self.frame = frame
        self.strings: list[str] = []
        self.index: dict[str, int] = {}
        self.transactions: list[tuple[Any, ...]] = []
        self.events = 0
        self.time_from = ""
        self.seq_from = 0

    def s(self, text: str | None) -> int | None:
        if text is None:
            return None
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.strings)
            self.strings.append(text)
        return found

    def encode(self) -> bytes:
        return safe_json({"n": self.n, "first": self.first, "s": self.strings, "k": self.frame, "t": self.transactions})

    def info(self) -> ChunkInfo:
        last = self.transactions[-1] if self.transactions else (0, "")
        return ChunkInfo(self.n, self.first, len(self.transactions), self.events, self.time_from, last[1],
                         self.seq_from, last[0])


_EVALUATED_VIEW: Any = msgspec.defstruct(
    "KeyPointEvaluatedPageView", [("name", str), ("rating", Rating), ("helpful", int), ("harmful", int),
                                  ("rationale", Union[str, None], None)],
    kw_only=True, frozen=True, gc=False, tag="KeyPointEvaluated", tag_field="type", module=__name__)
_EVALUATED = (_EVALUATED_VIEW, KeyPointEvaluated)
_DECODER = msgspec.json.Decoder(Union[(_EVALUATED_VIEW, *(kind for kind in EVENT_TYPES if kind is not KeyPointEvaluated),
                                       TransactionCommitted)])
"""Lines as the page reads them: a rating (most of any log) as a view of what its op shows, the rest whole."""


def build(path: Path, project: str = "", chunk_events: int = CHUNK_EVENTS,
          progress: Callable[[int], None] | None = None) -> PageData:
    """The page data of the log at `path`, from one pass: transactions in chunks of at least
    `chunk_events` events, each opening with the playbook folded up to it.

    The log is read as the store's fold reads it (a chunk decoded at once and its chain checked
    in bulk, the strict reader wherever that cannot vouch for a chunk): damage raises
    `CorruptLogError`, and a torn tail is left out. `progress` is called with the bytes read
    so far after each run of transactions."""
    builder = _Builder(chunk_events)
    reader = RunReader(path)
    with _no_cycle_collection():
        for records in reader.runs(_DECODER):
            builder.add(records)
            if progress is not None:
                progress(reader.position.offset)
        return builder.finish(project, reader.position.seq)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused: the page data is millions of small lists that hold no cycle, and each
    collection would walk all of them again (it doubled the time of a long log's page)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class _Builder:
    """The page data while the log is read: the chunks so far, the folded playbook, the head's tallies."""

    def __init__(self, chunk_events: int) -> None:
        self.chunk_events = chunk_events
        self.state = PlaybookState()
        self.encoded: list[bytes] = []
        self.infos: list[ChunkInfo] = []
        self.current = _Chunk(0, 0, keyframe(self.state))
        self.summary = _Series()
        self.usage: dict[str, list[Any]] = {}
        self.causes: dict[str, int] = dict.fromkeys(CAUSES, 0)
        self.sessions: list[str] = []  # transactions' sessions, oldest first: the most recent ones at least
        self.cause_of_source: dict[str, tuple[Cause, Cause]] = {}
        self.last_at = ""
        self.total_tx = self.total_events = 0
        self.totals = [0, 0]  # the sums of helpful and of harmful over the playbook, kept as it changes
        self.ops: list[Sequence[Any]] = []  # the open transaction's ops, its section mask, whether it completed learning
        self.mask = 0
        self.learned = False
        self.calls: list[ModelCallRecorded] = []  # the open transaction's model calls, counted at its commit
        self.rated: dict[str, Any] = {}  # ratings not yet applied: each entry's last (see _settle)
        self.known: dict[str, tuple[int, int]] = {}
        """Per name rated in the current chunk: its index in the chunk's strings, and the bit of its section
        (0: not in the playbook). Emptied when the chunk ends or another event may move an entry."""

    def add(self, records: list[Any]) -> None:
        """Whole transactions, their records in log order: each event's op taken and the event applied (a
        rating by `_settle`), each commit closing its transaction (and the chunk, when it is full)."""
        current = self.current
        index, strings, known = current.index, current.strings, self.known
        rated = self.rated
        ops, mask = self.ops, self.mask
        append = ops.append
        evaluated_view, evaluated = _EVALUATED
        for record in records:
            kind = type(record)
            if kind is evaluated_view or kind is evaluated:  # most of any log: its op inlined
                name = record.name
                try:  # a name and a rating word are met again and again: a miss is the rare case
                    n, bit = known[name]
                except KeyError:
                    n, bit = self._know(name)
                try:
                    r = index[rating := record.rating]
                except KeyError:
                    r = index[rating] = len(strings)
                    strings.append(rating)
                if (why := record.rationale) is not None and (why := index.get(rationale := why)) is None:
                    why = index[rationale] = len(strings)
                    strings.append(rationale)
                append(("e", n, r, record.helpful, record.harmful, why))
                if bit:  # an entry of the playbook: the fold applies it (see _settle)
                    mask |= bit
                    rated[name] = record
            elif kind is TransactionCommitted:
                self.mask = mask
                self._commit(record)
                if self.current is not current:
                    current = self.current
                    index, strings = current.index, current.strings
                ops, mask = self.ops, 0
                append = ops.append
            else:
                mask |= self._other(record)
        self.ops, self.mask = ops, mask

    def _know(self, name: str) -> tuple[int, int]:
        """`known`'s entry for `name`, made: its index in the chunk's strings, the bit of its section."""
        index, strings = self.current.index, self.current.strings
        if (n := index.get(name)) is None:
            n = index[name] = len(strings)
            strings.append(name)
        section = self.state.where.get(name)
        entry = self.known[name] = (n, 0 if section is None else SECTION_BIT[section])
        return entry

    def _settle(self) -> None:
        """Apply the ratings held back since the last settle, keeping the sums of the counters.

        A rating sets its entry's counters, so of an entry's ratings in a row only the last one
        counts: held back until the playbook is looked at (another event's apply, a summary
        sample, a keyframe), each entry's last rating is applied once. No entry moved or went
        in between (any other event settles first)."""
        rated = self.rated
        if not rated:
            return
        where, sections, totals = self.state.where, self.state.sections, self.totals
        helpful_sum, harmful_sum = totals
        for name, record in rated.items():
            kp = sections[where[name]][name]
            helpful, harmful = record.helpful, record.harmful
            helpful_sum += helpful - kp.helpful
            harmful_sum += harmful - kp.harmful
            kp.helpful = helpful
            kp.harmful = harmful
        totals[0], totals[1] = helpful_sum, harmful_sum
        rated.clear()

    def _other(self, event: Any) -> int:
        """The op of an event other than a rating, taken before it is applied; the sections it touches."""
        current = self.current
        self._settle()
        self.known.clear()
        if isinstance(event, UnknownRecord):  # a newer version's record: shown, never applied
            self.ops.append(["x", current.s(label(event.type)), None, None])
            return 0
        op, bits = op_of(event, current.s, self.state.where)  # before it is applied: where its entries were
        self._apply(event)
        self.ops.append(op)
        if op[0] == "x":
            self.learned = self.learned or isinstance(event, LearningCompleted)
            if isinstance(event, ModelCallRecorded):
                self.calls.append(event)
        return bits

    def _commit(self, commit: TransactionCommitted) -> None:
        """Close the open transaction; open the next chunk when this one is full."""
        current, ops = self.current, self.ops
        index = current.index
        seq, at, session, model, total = commit.seq, commit.at, commit.session, commit.model, self.total_tx
        if (causes := self.cause_of_source.get(commit.source)) is None:
            causes = self.cause_of_source[commit.source] = causes_of(commit.source)
        cause = causes[bool(model) or self.learned]
        if self.calls:
            self._count_calls(at)
        self.causes[cause] += 1
        if session:
            sessions = self.sessions
            sessions.append(session)
            if len(sessions) >= 8 * RECENT_SESSIONS:  # only the most recent can still be shown: keep memory flat
                sessions[:] = reversed(_recent(sessions, RECENT_SESSIONS))
        s = current.s
        events = len(ops)
        first_seq = seq - events if events else seq  # seqs run on without a gap
        current.transactions.append((
            seq, at, commit.tx, index.get(commit.source) or s(commit.source), cause,
            None if session is None else index.get(session) or s(session),
            None if model is None else index.get(model) or s(model),
            None if commit.analysis is None else s(commit.analysis),
            None if commit.reasoning is None else s(commit.reasoning),
            None if commit.note is None else s(commit.note), self.mask, ops, first_seq))
        if not current.time_from:
            current.time_from, current.seq_from = at, first_seq
        current.events += events
        self.last_at = at
        if not total % self.summary.stride:
            self._settle()
            self.summary.after(total, at, self.state, self.totals)
        self.total_tx = total + 1
        self.total_events += events
        self.ops, self.learned = [], False
        if current.events >= self.chunk_events and current.events >= 2 * len(self.state.where):
            self._next_chunk()

    def _next_chunk(self) -> None:
        """Close the full chunk and open the next at the playbook as it stands."""
        self._settle()  # the state the next one starts from
        self.known.clear()
        self.encoded.append(self.current.encode())
        self.infos.append(self.current.info())
        self.current = _Chunk(len(self.infos), self.total_tx, keyframe(self.state))

    def _apply(self, event: Any) -> None:
        """Apply `event` to the playbook, keeping the sums of its counters."""
        names = touched_names(event)
        before = _counters(self.state, names)
        apply(self.state, event)
        after = _counters(self.state, names)
        self.totals[0] += after[0] - before[0]
        self.totals[1] += after[1] - before[1]

    def _count_calls(self, at: str) -> None:
        """Count the open transaction's model calls as usage of the day of its commit `at`."""
        for call in self.calls:
            if (used := usage_of(call)) is not None:
                day = self.usage.setdefault(at[:10], [0, 0, 0, 0.0])
                day[0] += 1
                day[1] += used[0]
                day[2] += used[1]
                day[3] += used[2]
        self.calls = []

    def finish(self, project: str, seq: int) -> PageData:
        """The head and the chunks; the last chunk closed unless it is empty (and not the only one)."""
        if self.current.transactions or not self.encoded:
            self.encoded.append(self.current.encode())
            self.infos.append(self.current.info())
        self._settle()
        state = self.state
        if self.total_tx:
            self.summary.last = (self.total_tx - 1, self.last_at)
        points = self.summary.finish(state, self.totals)
        head = PageHead(
            format=1, project=project, generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            sections=list(SECTIONS), transactions=self.total_tx, events=self.total_events, seq=seq,
            version=state.version, chunks=self.infos, now=keyframe(state), summary=points,
            usage=[UsageDay(day, *values) for day, values in sorted(self.usage.items())],
            sessions=_recent(self.sessions, RECENT_SESSIONS), causes=self.causes, ops=OP_KINDS,
        )
        return PageData(head=head, head_json=safe_json(head), chunks=self.encoded)


class _Series:
    """The summary's samples: at most about 2 x SUMMARY_POINTS on any length, evenly spaced. The stride
    doubles (and every other sample goes) whenever the count reaches the limit; the last
    transaction is always a sample."""

    def __init__(self) -> None:
        self.points: list[SummaryPoint] = []
        self.stride = 1
        self.last: tuple[int, str] | None = None

    def due(self, index: int) -> bool:
        """True when transaction `index` is a sample (the playbook after it is looked at)."""
        return not index % self.stride

    def after(self, index: int, at: str, state: PlaybookState, totals: list[int]) -> None:
        self.last = (index, at)
        if index % self.stride:
            return
        self.points.append(_sample(index, at, state, totals))
        if len(self.points) >= 2 * SUMMARY_POINTS:
            self.stride *= 2
            self.points = [point for point in self.points if point.tx % self.stride == 0]

    def finish(self, state: PlaybookState, totals: list[int]) -> list[SummaryPoint]:
        if self.last is not None and (not self.points or self.points[-1].tx != self.last[0]):
            self.points.append(_sample(*self.last, state, totals))
        return self.points


def _recent(sessions: list[str], count: int) -> list[str]:
    """The last `count` different sessions of `sessions`, newest first."""
    recent: dict[str, None] = {}
    for session in reversed(sessions):
        if session not in recent:
            recent[session] = None
            if len(recent) == count:
                break
    return list(recent)


def _sample(index: int, at: str, state: PlaybookState, totals: list[int]) -> SummaryPoint:
    return SummaryPoint(index, at, [len(state.sections[section]) for section in SECTIONS], totals[0], totals[1])


def _counters(state: PlaybookState, names: Iterable[str]) -> tuple[int, int]:
    helpful = harmful = 0
    for name in names:
        kp = state.get(name)
        if kp is not None:
            helpful += kp.helpful
            harmful += kp.harmful
    return helpful, harmful
