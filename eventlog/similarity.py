"""How alike two key points are: a lexical measure over their content words, fast enough for every pair.

Pure and dependency-free by default. Texts are reduced to content words: lower case,
punctuation and a short list of function words dropped, a light suffix stemmer
("committing", "commits" -> "commit"), and a few negations kept, since "always" and
"never" make two lessons opposite. With the optional `rapidfuzz` installed
(`pip install '.[dedup]'`), the score is the mean of its `token_set_ratio` and
`token_sort_ratio` over those words (the second keeps "pytest over unittest" apart from
its reverse a little better), which also forgives small spelling differences; without it, the same words compared
as sets (overlap of the smaller set, blended with Jaccard). Both thresholds were
chosen on the labelled pairs in `tests/dedup_pairs.py` (see README).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _rapidfuzz() -> Any:
    """rapidfuzz's `fuzz`, optional (a well-kept C implementation of the fuzzy ratios), or None when it is not
    installed. Imported on first use: importing it costs tens of milliseconds, which a hook that records a
    learning request and never compares two lessons should not pay."""
    try:
        from rapidfuzz import fuzz
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    return fuzz


def rapidfuzz_installed() -> bool:
    """Whether the optional rapidfuzz measure is available here."""
    return _rapidfuzz() is not None


RAPIDFUZZ = "rapidfuzz token_set+token_sort"
LEXICAL = "content-word overlap"
THRESHOLDS = {RAPIDFUZZ: 0.82, LEXICAL: 0.68}
"""Default similarity at or above which two key points are duplicates, per method."""

NEGATION_PENALTY = 0.8
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+#/-]*[a-z0-9+#]|[a-z0-9]")
_STOP = frozenset(
    "a an the and or of to in on at for with by from as is are be been was were it its this that these those "
    "you your we our i me my they them their he she his her do does did done please should must can could "
    "would will shall may might every each any all some when then than so such into onto over under about "
    "use uses used using prefer prefers preferred instead rather want wants wanted like likes user users "
    "one get gets keep keeps make makes very just also only first".split()
)
_NEGATIONS = {"never": "not", "no": "not", "don't": "not", "dont": "not", "avoid": "not", "without": "not",
              "nor": "not", "not": "not", "cannot": "not", "can't": "not"}
_SYNONYMS = {"repo": "repository", "prs": "pull", "pr": "pull", "favour": "prefer", "favor": "prefer",
             "plaintext": "plain", "straight": "direct", "directly": "direct", "hand-edit": "edit"}


def _stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: len(word) - len(suffix)] + keep
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":  # committ -> commit
        word = word[:-1]
    if len(word) > 4 and word[-1] == "e":  # hardcode, hardcod(ing) -> hardcod
        word = word[:-1]
    return word


@lru_cache(maxsize=65536)
def content_words(text: str) -> tuple[str, ...]:
    """The words of `text` that carry its lesson, normalized; the same lesson worded differently gives
    mostly the same words."""
    words = []
    for raw in _WORD.findall(text.lower().replace("n't", " not")):
        word = _SYNONYMS.get(raw, raw)
        word = _NEGATIONS.get(word, word)
        if word in _STOP:
            continue
        words.append(_stem(word))
    return tuple(words)


def _set_score(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    common = len(a & b)
    return 0.5 * common / min(len(a), len(b)) + 0.5 * common / len(a | b)


def method() -> str:
    """The measure in use: rapidfuzz when installed, else the dependency-free one."""
    return RAPIDFUZZ if _rapidfuzz() is not None else LEXICAL


def similarity(a: str, b: str, using: str | None = None) -> float:
    """How alike the lessons of `a` and `b` are, from 0 to 1."""
    return _similarity(a, b, using or method())


@lru_cache(maxsize=65536)
def _similarity(a: str, b: str, using: str) -> float:
    # Kept: a learning cycle compares each ADD with every key point twice, for the collapse guard's trial and
    # for the decision under the log's lock, and the second should not cost what the first did.
    words_a, words_b = content_words(a), content_words(b)
    numbers_a = {w for w in words_a if w[0].isdigit()}
    numbers_b = {w for w in words_b if w[0].isdigit()}
    if numbers_a and numbers_b and numbers_a != numbers_b:
        return 0.0  # Python 3.8 is not Python 3.11, port 8080 not 9090
    fuzz = _rapidfuzz() if using == RAPIDFUZZ else None
    score: float
    if fuzz is not None:
        score = (fuzz.token_set_ratio(" ".join(words_a), " ".join(words_b))
                 + fuzz.token_sort_ratio(" ".join(words_a), " ".join(words_b))) / 200.0
    else:
        score = _set_score(frozenset(words_a), frozenset(words_b))
    if ("not" in words_a) != ("not" in words_b):
        score *= NEGATION_PENALTY  # one may forbid what the other asks for
    return score


def candidate_pairs(texts: Sequence[str]) -> Iterable[tuple[int, int]]:
    """Pairs (i < j) that share at least one content word: every pair that can score above 0, found
    through an index instead of comparing all n*(n-1)/2."""
    postings: dict[str, list[int]] = {}
    for index, text in enumerate(texts):
        for word in set(content_words(text)):
            postings.setdefault(word, []).append(index)
    limit = max(100, len(texts) // 50)  # a word in more texts than this says nothing about duplicates alone
    seen: set[tuple[int, int]] = set()
    rare = {word: ids for word, ids in postings.items() if len(ids) <= limit}
    for ids in rare.values():
        for x, i in enumerate(ids):
            for j in ids[x + 1:]:
                if (i, j) not in seen:
                    seen.add((i, j))
                    yield i, j


def duplicate_pairs(texts: Sequence[str], threshold: float | None = None,
                    using: str | None = None) -> list[tuple[int, int, float]]:
    """Every pair (i, j, similarity) of `texts` at or above `threshold`, most alike first."""
    using = using or method()
    threshold = THRESHOLDS[using] if threshold is None else threshold
    found = []
    for i, j in candidate_pairs(texts):
        score = similarity(texts[i], texts[j], using)
        if score >= threshold:
            found.append((i, j, score))
    found.sort(key=lambda item: (-item[2], item[0], item[1]))
    return found
