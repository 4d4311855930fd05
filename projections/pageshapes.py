"""The history page's data as it is shipped: the head, the chunk map, the summary's samples, model usage
per day, and their encoding as JSON safe to embed in HTML."""

from __future__ import annotations

from typing import Any

import msgspec

from eventlog.domain import PlaybookState

from .pageops import SECTIONS


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


class ValuePoint(msgspec.Struct, frozen=True, array_like=True):
    """One `playbook eval` measurement: when, over how many cases, the mean score with and without the
    playbook, and what it cost."""

    at: str
    cases: int
    with_score: float
    without_score: float
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
    value: list[ValuePoint] = []
    """What `playbook eval` measured, oldest first."""


class PageData(msgspec.Struct, frozen=True):
    """The page's head and its chunks, each already encoded as JSON safe to embed in HTML."""

    head: PageHead
    head_json: bytes
    chunks: list[bytes]


_encoder = msgspec.json.Encoder()


def safe_json(value: Any) -> bytes:
    """`value` as JSON that cannot end a `<script>` element or open a comment in it: every `<`, `>`
    and `&` (which JSON only has inside strings) is written as a \\u escape, and so are U+2028/9."""
    data = _encoder.encode(value).replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if data.isascii():  # one quick pass: most pages have no other character at all
        return data
    return data.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")


def keyframe(state: PlaybookState) -> list[list[list[Any]]]:
    """The playbook as five lists of `[name, text, helpful, harmful]`, sections and entries in order."""
    return [[[kp.name, kp.text, kp.helpful, kp.harmful] for kp in state.sections[section].values()]
            for section in SECTIONS]
