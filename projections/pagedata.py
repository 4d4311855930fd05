"""The data behind the history page: every transaction as compact deltas, in chunks, from one pass over the log.

One strict read of the log (`LogReader`, hashes checked) builds everything: each
transaction becomes a short array of its cause and its changes (`ops`), strings are
interned per chunk, and each chunk starts with the folded playbook before its first
transaction (a keyframe: each event is applied with the fold's own `apply` right after
its op is taken), so the page computes the playbook at any point from one keyframe and
at most one chunk of deltas. No transaction is folded twice.

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

import re
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import msgspec

from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.events import (
    CountersSet,
    KeyPointAdded,
    KeyPointDeleted,
    KeyPointEvaluated,
    KeyPointImported,
    KeyPointMoved,
    KeyPointPruned,
    KeyPointsMerged,
    KeyPointUpdated,
    LearningCompleted,
    ModelCallRecorded,
    SectionReordered,
    TransactionCommitted,
    UnknownRecord,
)
from eventlog.evolve import apply
from eventlog.registry import SHORT_NAMES, tag_of, touched_names
from eventlog.store import LogReader

from .prices import cost_of

SECTIONS: tuple[str, ...] = tuple(SECTION_SLUGS)
_SECTION_INDEX = {name: index for index, name in enumerate(SECTIONS)}
_SECTION_BIT = {name: 1 << index for index, name in enumerate(SECTIONS)}

Cause = Literal["learning", "hook", "manual", "revert", "import", "merge", "other"]
CAUSES: tuple[Cause, ...] = ("learning", "hook", "manual", "revert", "import", "merge", "other")

OP_KINDS = {
    "a": "added", "i": "imported", "u": "re-worded", "m": "merged", "d": "deleted", "p": "pruned",
    "e": "rated", "c": "counters set", "v": "moved", "r": "re-ordered", "x": "other",
}
"""What each op kind means; the page's renderer and fold read the same letters."""

CHUNK_EVENTS = 20_000
"""Events per chunk, at least: small enough that the newest chunk parses at once, large enough
that keyframes stay a small part of the page."""
SUMMARY_POINTS = 200
"""Samples of the summary's series, at most (plus the last transaction)."""
RECENT_SESSIONS = 300


class ChunkInfo(msgspec.Struct, frozen=True):
    """Where one chunk sits: its transactions `first` .. `first + count - 1`, their times and seqs."""

    n: int
    first: int
    count: int
    events: int
    time_from: str
    time_to: str
    seq_from: int
    seq_to: int


class SummaryPoint(msgspec.Struct, frozen=True, array_like=True):
    """After transaction `tx` (a global index): entries per section, and the sums of the counters."""

    tx: int
    at: str
    per_section: list[int]
    helpful: int
    harmful: int


class UsageDay(msgspec.Struct, frozen=True, array_like=True):
    """Model usage recorded on one UTC day."""

    day: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class PageHead(msgspec.Struct, frozen=True):
    """What the page needs before any chunk: totals, the chunk map, the playbook now, the summary."""

    format: int
    project: str
    generated: str
    sections: list[str]
    transactions: int
    events: int
    seq: int
    version: str
    chunks: list[ChunkInfo]
    now: list[list[list[Any]]]
    summary: list[SummaryPoint]
    usage: list[UsageDay]
    sessions: list[str]
    """The most recent sessions, newest first (for the session filter's suggestions)."""
    causes: dict[str, int]
    ops: dict[str, str]


class PageData(msgspec.Struct, frozen=True):
    """The page's head and its chunks, each already encoded as JSON safe to embed in HTML."""

    head: PageHead
    head_json: bytes
    chunks: list[bytes]


def cause_of(commit: TransactionCommitted, events: list[Any]) -> Cause:
    """What kind of act a transaction was, from its commit's source (and whether a model was asked)."""
    source = commit.source
    if source.startswith("hook:") or source.startswith("learn"):
        return "learning" if commit.model or any(isinstance(e, LearningCompleted) for e in events) else "hook"
    if source.startswith("manual"):
        return "manual"
    if source.startswith("revert"):
        return "revert"
    if source.startswith("import") or source.startswith("bootstrap"):
        return "import"
    if source.startswith("merge"):
        return "merge"
    return "other"


_encoder = msgspec.json.Encoder()


def safe_json(value: Any) -> bytes:
    """`value` as JSON that cannot end a `<script>` element or open a comment in it: every `<`, `>`
    and `&` (which JSON only has inside strings) is written as a \\u escape, and so are U+2028/9."""
    data = _encoder.encode(value)
    return (data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
            .replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029"))


def keyframe(state: PlaybookState) -> list[list[list[Any]]]:
    """The playbook as five lists of `[name, text, helpful, harmful]`, sections and entries in order."""
    return [[[kp.name, kp.text, kp.helpful, kp.harmful] for kp in state.sections[section].values()]
            for section in SECTIONS]


class _Chunk:
    """One chunk being built: its string table and transactions."""

    def __init__(self, n: int, first: int, frame: list[list[list[Any]]]) -> None:
        self.n = n
        self.first = first
        self.frame = frame
        self.strings: list[str] = []
        self.index: dict[str, int] = {}
        self.transactions: list[list[Any]] = []
        self.events = 0
        self.time_from = ""
        self.time_to = ""
        self.seq_from = 0
        self.seq_to = 0

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
        return ChunkInfo(self.n, self.first, len(self.transactions), self.events, self.time_from, self.time_to,
                         self.seq_from, self.seq_to)


def _section(name: str) -> int:
    return _SECTION_INDEX.get(name, len(SECTIONS) - 1)  # the fold files an unknown section under OTHERS


def _op(event: Any, s: Callable[[str | None], int | None], where: dict[str, str]) -> tuple[list[Any], int]:
    """The op for one event, and the bit mask of the sections it touches (`where`: the placements
    just before it)."""

    def bit(name: str) -> int:
        section = where.get(name)
        return 0 if section is None else 1 << _section(section)

    kind = type(event)
    if kind is KeyPointEvaluated:
        return ["e", s(event.name), s(event.rating), event.helpful, event.harmful, s(event.rationale)], bit(event.name)
    if kind is KeyPointAdded or kind is KeyPointImported:
        return (["a" if kind is KeyPointAdded else "i", s(event.name), _section(event.section), s(event.text),
                 event.helpful, event.harmful], 1 << _section(event.section))
    if kind is KeyPointUpdated:
        return ["u", s(event.name), s(event.text), s(event.previous_text)], bit(event.name)
    if kind is KeyPointsMerged:
        mask = 1 << _section(event.section)
        for source in event.sources:
            mask |= bit(source)
        return (["m", s(event.name), _section(event.section), s(event.text), event.helpful, event.harmful,
                 [s(source) for source in event.sources]], mask)
    if kind is KeyPointDeleted:
        return ["d", s(event.name), s(event.reason or None), s(event.text)], bit(event.name)
    if kind is KeyPointPruned:
        return ["p", s(event.name), s(event.rule), event.helpful, event.harmful], bit(event.name)
    if kind is CountersSet:
        return ["c", s(event.name), event.helpful, event.harmful], bit(event.name)
    if kind is KeyPointMoved:
        return ["v", s(event.name), _section(event.to_section)], bit(event.name) | 1 << _section(event.to_section)
    if kind is SectionReordered:
        return ["r", _section(event.section), [s(name) for name in event.names]], 1 << _section(event.section)
    return ["x", s(label(tag_of(event))), s(getattr(event, "name", None)), s(_detail(event))], 0


def label(tag: str) -> str:
    """How the page names an event type it does not fold: the CLI's short name (`OperationSkipped`
    -> `skipped`), or for a type this version does not know its tag as words."""
    short = SHORT_NAMES.get(tag)
    return short if short is not None else re.sub(r"(?<=[a-z])(?=[A-Z])", " ", tag).lower()


_DETAIL_FIELDS = ("reason", "detail", "error", "hook", "file_format", "path", "version", "kept_at", "moved_to")


def _detail(event: Any) -> str | None:
    """A short line for an event the page shows but does not fold: its telling fields."""
    parts = []
    for field in _DETAIL_FIELDS:
        value = getattr(event, field, None)
        if value not in (None, ""):
            parts.append(f"{field}: {value}")
    return "; ".join(parts) or None


def _usage(event: Any) -> tuple[int, int, float] | None:
    """(input tokens, cache included; output tokens; cost in USD, 0 when unknown) of a model call's record."""
    if not isinstance(event, ModelCallRecorded):
        return None
    cost = cost_of(event)
    tokens_in = event.input_tokens + event.cache_creation_input_tokens + event.cache_read_input_tokens
    return tokens_in, event.output_tokens, cost if cost is not None else 0.0


def build(path: Path, project: str = "", chunk_events: int = CHUNK_EVENTS,
          progress: Callable[[int], None] | None = None) -> PageData:
    """The page data of the log at `path`, from one strict pass: transactions in chunks of at
    least `chunk_events` events, each opening with the playbook folded up to it.

    `progress` is called with the bytes read so far every chunk."""
    state = PlaybookState()
    encoded: list[bytes] = []
    infos: list[ChunkInfo] = []
    current = _Chunk(0, 0, keyframe(state))
    summary = _Series()
    usage: dict[str, list[Any]] = {}
    causes: dict[str, int] = dict.fromkeys(CAUSES, 0)
    sessions: dict[str, None] = {}
    total_tx = total_events = 0
    totals = [0, 0]  # the sums of helpful and of harmful over the playbook, kept as it changes
    where, sections = state.where, state.sections
    reader = LogReader(path)
    for transaction in reader:
        events = transaction.events
        commit = transaction.commit
        if current.events >= max(chunk_events, 2 * len(where)):
            encoded.append(current.encode())
            infos.append(current.info())
            if progress is not None:
                progress(transaction.start.offset)
            current = _Chunk(len(infos), total_tx, keyframe(state))
        s = current.s
        index = current.index
        strings = current.strings
        ops = []
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
                    mask |= _SECTION_BIT[section]
                    kp = sections[section][name]
                    totals[0] += event.helpful - kp.helpful
                    totals[1] += event.harmful - kp.harmful
                    kp.helpful = event.helpful
                    kp.harmful = event.harmful
                continue
            if isinstance(event, UnknownRecord):  # a newer version's record: shown, never applied
                ops.append(["x", s(label(event.type)), None, None])
                continue
            op, bits = _op(event, s, where)  # before it is applied: where its entries were
            names = touched_names(event)
            before = _counters(state, names)
            apply(state, event)
            after = _counters(state, names)
            totals[0] += after[0] - before[0]
            totals[1] += after[1] - before[1]
            ops.append(op)
            mask |= bits
            if op[0] == "x" and (used := _usage(event)) is not None:
                day = usage.setdefault(commit.at[:10], [0, 0, 0, 0.0])
                day[0] += 1
                day[1] += used[0]
                day[2] += used[1]
                day[3] += used[2]
        cause = cause_of(commit, events)
        causes[cause] += 1
        if commit.session:
            sessions.pop(commit.session, None)
            sessions[commit.session] = None
        first_seq = events[0].seq if events else commit.seq
        current.transactions.append([
            commit.seq, commit.at, commit.tx, s(commit.source), cause, s(commit.session), s(commit.model),
            s(commit.analysis), s(commit.reasoning), s(commit.note), mask, ops, first_seq,
        ])
        if not current.time_from:
            current.time_from, current.seq_from = commit.at, first_seq
        current.time_to, current.seq_to = commit.at, commit.seq
        current.events += len(events)
        summary.after(total_tx, commit.at, state, totals)
        total_tx += 1
        total_events += len(events)
    if current.transactions or not encoded:
        encoded.append(current.encode())
        infos.append(current.info())
    points = summary.finish(state, totals)
    head = PageHead(
        format=1, project=project, generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        sections=list(SECTIONS), transactions=total_tx, events=total_events, seq=reader.position.seq,
        version=state.version, chunks=infos, now=keyframe(state), summary=points,
        usage=[UsageDay(day, *values) for day, values in sorted(usage.items())],
        sessions=list(reversed(sessions))[:RECENT_SESSIONS], causes=causes, ops=OP_KINDS,
    )
    return PageData(head=head, head_json=safe_json(head), chunks=encoded)


class _Series:
    """The summary's samples: at most about 2 x SUMMARY_POINTS on any length, evenly spaced. The stride
    doubles (and every other sample goes) whenever the count reaches the limit; the last
    transaction is always a sample."""

    def __init__(self) -> None:
        self.points: list[SummaryPoint] = []
        self.stride = 1
        self.last: tuple[int, str] | None = None

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
