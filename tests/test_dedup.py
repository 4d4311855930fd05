"""Near-duplicate key points: the measure on labelled pairs, and merging them as MERGE events."""

from __future__ import annotations

import pytest

from eventlog import similarity
from tests.dedup_pairs import DISTINCT, DUPLICATES

GRID = [round(0.5 + 0.02 * i, 2) for i in range(25)]
MIN_PRECISION = 0.95


def precision_recall(using: str, threshold: float) -> tuple[float, float]:
    found = [similarity.similarity(a, b, using) >= threshold for _sa, a, _sb, b in DUPLICATES]
    wrong = [similarity.similarity(a, b, using) >= threshold for _sa, a, _sb, b in DISTINCT]
    true_positives, false_positives = sum(found), sum(wrong)
    precision = true_positives / (true_positives + false_positives) if true_positives + false_positives else 1.0
    return precision, true_positives / len(DUPLICATES)


def methods() -> list[str]:
    return [similarity.LEXICAL] + ([similarity.RAPIDFUZZ] if similarity.rapidfuzz_installed() else [])


def test_the_labelled_set_has_over_200_pairs_of_every_kind():
    assert len(DUPLICATES) + len(DISTINCT) >= 200 and len(DUPLICATES) >= 100 and len(DISTINCT) >= 100
    assert any(sa != sb for sa, _a, sb, _b in DUPLICATES) and any(sa != sb for sa, _a, sb, _b in DISTINCT)


@pytest.mark.parametrize("using", [similarity.LEXICAL, similarity.RAPIDFUZZ])
def test_each_default_threshold_is_the_lowest_with_precision_at_least_095(using):
    if using == similarity.RAPIDFUZZ and not similarity.rapidfuzz_installed():
        pytest.skip("rapidfuzz is not installed (the dedup extra)")
    # Merging two lessons that differ loses one, so precision comes first: the default is the lowest
    # threshold of the grid that keeps precision at MIN_PRECISION or above (the most recall at that precision).
    chosen = next(t for t in GRID if precision_recall(using, t)[0] >= MIN_PRECISION)
    assert similarity.THRESHOLDS[using] == chosen
    precision, recall = precision_recall(using, chosen)
    print(f"{using}: threshold {chosen}: precision {precision:.3f}, recall {recall:.3f}")
    assert recall >= 0.8


def test_flipped_rules_and_other_versions_stay_apart():
    for a, b in [("Never commit the .env file", "Always commit the .env file"),
                 ("The project uses Python 3.11", "The project uses Python 3.12"),
                 ("Run the tests before committing", "Run the linter before committing")]:
        for using in methods():
            assert similarity.similarity(a, b, using) < similarity.THRESHOLDS[using], (a, b, using)


def test_duplicate_pairs_finds_the_planted_pairs_among_many():
    texts = [f"Lesson {i}: {word} the {thing}" for i, (word, thing) in
             enumerate((w, t) for w in ("check", "cache", "pin", "log") for t in ("parser", "lock", "schema", "queue"))]
    texts += ["Always run the tests before you commit", "Run the tests before committing"]
    pairs = similarity.duplicate_pairs(texts)
    assert [(i, j) for i, j, _score in pairs] == [(len(texts) - 2, len(texts) - 1)]
