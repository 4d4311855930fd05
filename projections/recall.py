"""The UserPromptSubmit hook's index: the key points the budget left out, ranked by BM25, projected ahead.

File format, made for a reader that must not parse what it does not need: the same
header line as the injection (`<log size> <playbook.json mtime_ns> <settings stamp>`);
one line `recall-1 <top> <max_chars> <count> <terms_at>` (the format's name, then four numbers); `count` lines
`<doc, 7 digits>\t<JSON string>`, each a left-out key point as the playbook prints it;
then, from `terms_at` bytes after the JSON line, one line per term in byte order,
`<term>\t<doc>:<weight> <doc>:<weight> ...` (its best-weighted POSTINGS), each BM25
weight worked out here so the hook only adds numbers. Both runs of lines are sorted,
so the hook finds what it needs by binary search and never reads the rest. With recall off, `top` is 0 and nothing follows. The hook
(`playbook/quick/recall.py`, standard library only) decodes only the lines it prints; both split text into words with
`quickroads.terms`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from pathlib import Path

import msgspec

from eventlog.domain import KeyPoint, PlaybookState

from .config import setting_number, setting_switch
from .injection import injection_file
from .quickroads import MAX_INDEX_BYTES, RECALL_FORMAT, terms
from .render import format_entry

RECALL_KEY = "playbook_recall"
MAX_CHARS_KEY = "playbook_recall_max_chars"
DEFAULT_MAX_CHARS = 800
"""Most characters of key points one prompt may bring in."""
TOP = 3
"""Most key points one prompt may bring in."""
MAX_DOC_BYTES = MAX_INDEX_BYTES // 8
"""Most bytes of key point lines in an index: with their terms, the index stays well below what the hook reads."""
K1, B = 1.2, 0.75
POSTINGS = 64
"""Most key points kept per term (the best-weighted)."""

@lru_cache(maxsize=1 << 15)
def _counts(text: str) -> tuple[tuple[tuple[str, int], ...], int]:
    """The terms of `text` with their counts, in order of first use, and how many there are in all: kept
    per text, so an index rebuilt after a change splits only the texts it has not seen."""
    found: dict[str, int] = {}
    for term in terms(text):
        found[term] = found.get(term, 0) + 1
    return tuple(found.items()), sum(found.values())


def build(state: PlaybookState, left_out: list[str], max_chars: int = DEFAULT_MAX_CHARS, top: int = TOP,
          others: Sequence[tuple[str, KeyPoint]] = ()) -> bytes:
    """The index (everything after the header line) of the key points named in `left_out`, then of `others`
    (the orgs' the budget left out, each with the id the injection gives it: `org:acme/ctx-001`)."""
    docs: list[bytes] = []
    counts: list[tuple[tuple[str, int], ...]] = []
    lengths: list[int] = []
    encode = msgspec.json.encode
    size = 0
    found_kps = ((name, state.get(name)) for name in left_out)
    for name, kp in chain(found_kps, others):
        if kp is None:
            continue
        line = format_entry(name, kp.text, kp.helpful, kp.harmful)
        if len(line) >= max_chars:
            continue  # the hook never prints more than max_chars: such a line could never be recalled
        entry = b"%07d\t" % len(docs) + encode(line) + b"\n"
        size += len(entry)
        if size > MAX_DOC_BYTES:
            break  # in the plan's order: the key points ranked first are kept, and the hook's read stays bounded
        docs.append(entry)
        found, length = _counts(kp.text)
        counts.append(found)
        lengths.append(length)
    if not docs:
        return b"%s 0 %d 0 0\n" % (RECALL_FORMAT, max_chars)
    average = sum(lengths) / len(lengths) or 1.0
    frequency: dict[str, int] = {}
    for found in counts:
        for term, _tf in found:
            frequency[term] = frequency.get(term, 0) + 1
    n = len(docs)
    idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}
    postings: dict[str, list[tuple[float, int]]] = {}
    for doc, found in enumerate(counts):
        norm = K1 * (1 - B + B * lengths[doc] / average)
        for term, tf in found:
            postings.setdefault(term, []).append((idf[term] * tf * (K1 + 1) / (tf + norm), doc))
    table = []
    for term in sorted(postings, key=str.encode):
        # Only a term's strongest postings are kept: the hook adds at most POSTINGS numbers per prompt word,
        # and a key point that only a common word links to the prompt would not make the top few anyway.
        best = postings[term]
        if len(best) > 1:
            best = sorted(best, key=lambda item: (-item[0], item[1]))[:POSTINGS]
        table.append(f"{term}\t{' '.join(f'{doc}:{weight:.3f}' for weight, doc in best)}\n".encode())
    body = b"".join(docs)
    meta = b"%s %d %d %d %d" % (RECALL_FORMAT, top, max_chars, n, len(body))
    return meta + b"\n" + body + b"".join(table)


def recall_on(project: Path) -> bool:
    """Whether per-prompt recall is on for `project` (`config.setting_switch`; on by default)."""
    return setting_switch(project, RECALL_KEY, True)


def recall_file(log_size: int, snapshot_mtime_ns: int, stamp: str, state: PlaybookState, left_out: list[str],
                project: Path, others: Sequence[tuple[str, KeyPoint]] = ()) -> bytes:
    """The bytes of the recall projection: the index when recall is on, an empty object when off."""
    if recall_on(project):
        index = build(state, left_out, int(setting_number(project, MAX_CHARS_KEY, DEFAULT_MAX_CHARS)),
                      others=others)
    else:
        index = build(state, [], 0)
    return injection_file(log_size, snapshot_mtime_ns, index, stamp)
