"""Acceptance tests for spec 002: the Scoring module (SCN-SCORE-*, INV-SCORE-*).

The scoring spec predates sections: its "playbook with key point X" is read as a
sections playbook with X in OTHERS (where flat entries live after migration),
except SCN-SCORE-003-01/02 which format a flat `key_points` dict directly.
"""

import copy
import re
from datetime import datetime

import pytest

from playbook import (
    format_playbook,
    load_playbook,
    load_template,
    prune_harmful,
    save_playbook,
    update_playbook_data,
)

from tests.spec.helpers import (
    ENTRY_KEYS,
    MIS,
    OTH,
    PAT,
    all_entries,
    empty_sections,
    kp,
    make_pb,
    read_snapshot,
    rendered_candidates,
    write_legacy,
)

# `project` comes from conftest.py; every test here runs in a fresh project.
pytestmark = pytest.mark.usefixtures("project")


def find(pb, name):
    hits = [e for e in all_entries(pb) if e["name"] == name]
    assert len(hits) <= 1
    return hits[0] if hits else None


# --------------------------------------------------------------------------- SCN-SCORE-002


def _rate(rating):
    pb = make_pb({OTH: [kp("kpt_001", "use types", 3, 1)]})
    result = update_playbook_data(pb, {"new_key_points": [], "evaluations": [{"name": "kpt_001", "rating": rating}]})
    assert result is pb
    return result


def test_SCN_SCORE_002_01_helpful_rating_increments_counter():
    result = _rate("helpful")
    assert find(result, "kpt_001") == kp("kpt_001", "use types", 4, 1)


def test_SCN_SCORE_002_02_harmful_rating_increments_counter():
    result = _rate("harmful")
    assert find(result, "kpt_001") == kp("kpt_001", "use types", 3, 2)


def test_SCN_SCORE_002_03_neutral_rating_changes_nothing():
    result = _rate("neutral")
    assert find(result, "kpt_001") == kp("kpt_001", "use types", 3, 1)


def test_SCN_SCORE_002_04_unknown_rating_changes_nothing():
    result = _rate("bogus")
    assert find(result, "kpt_001") == kp("kpt_001", "use types", 3, 1)


def test_REQ_SCORE_002_unknown_name_ignored_and_repeated_ratings_accumulate():
    pb = make_pb({OTH: [kp("kpt_001", "use types", 3, 1)], PAT: [kp("pat-001", "p", 0, 0)]})
    before = copy.deepcopy(pb)
    result = update_playbook_data(
        pb,
        {
            "new_key_points": [],
            "evaluations": [
                {"name": "kpt_999", "rating": "helpful"},
                {"name": "pat-001", "rating": "helpful"},
                {"name": "pat-001", "rating": "helpful"},
                {"name": "pat-001", "rating": "harmful"},
                {"name": "kpt_001", "rating": "HELPFUL"},  # ratings are exact strings
            ],
        },
    )
    expected = copy.deepcopy(before["sections"])
    expected[PAT] = [kp("pat-001", "p", 2, 1)]
    assert result["sections"] == expected


# --------------------------------------------------------------------------- SCN-SCORE-003


def test_SCN_SCORE_003_01_format_includes_counts():
    lines = "[kpt_001] helpful=5 harmful=1 :: use type hints\n[kpt_002] helpful=0 harmful=0 :: prefer pathlib"
    flat = {
        "version": "1.0",
        "last_updated": None,
        "key_points": [kp("kpt_001", "use type hints", 5, 1), kp("kpt_002", "prefer pathlib", 0, 0)],
    }
    out = format_playbook(flat)
    assert lines in out
    # the same entries as a sections playbook (in OTHERS, where migration puts them)
    sect = make_pb({OTH: flat["key_points"]})
    out2 = format_playbook(sect)
    assert ("## OTHERS\n" + lines) in out2
    assert out2 in rendered_candidates("## OTHERS\n" + lines)


def test_SCN_SCORE_003_02_empty_playbook_returns_empty_string():
    assert format_playbook({"key_points": []}) == ""
    assert format_playbook({"version": "1.0", "last_updated": None, "key_points": []}) == ""


# --------------------------------------------------------------------------- SCN-SCORE-004..006 (migration)


def _load_single(project, entry):
    write_legacy(project, {"version": "1.0", "key_points": [entry]})
    pb = load_playbook()
    assert set(pb) == {"version", "last_updated", "sections"}
    assert "key_points" not in pb
    return pb


def test_SCN_SCORE_004_01_load_bare_string_entry(project):
    pb = _load_single(project, "always use type hints")
    expected = empty_sections()
    expected[OTH] = [{"name": "kpt_001", "text": "always use type hints", "helpful": 0, "harmful": 0}]
    assert pb == {"version": "1.0", "last_updated": None, "sections": expected}
    assert "score" not in pb["sections"][OTH][0]


def test_SCN_SCORE_005_01_load_dict_without_score_or_counters(project):
    pb = _load_single(project, {"name": "kpt_001", "text": "use types"})
    expected = empty_sections()
    expected[OTH] = [{"name": "kpt_001", "text": "use types", "helpful": 0, "harmful": 0}]
    assert pb == {"version": "1.0", "last_updated": None, "sections": expected}
    assert "score" not in pb["sections"][OTH][0]


def test_REQ_SCORE_005_dict_without_name_gets_generated_name(project):
    pb = _load_single(project, {"text": "nameless tip"})
    (entry,) = pb["sections"][OTH]
    assert set(entry) == ENTRY_KEYS
    assert entry["text"] == "nameless tip"
    assert (entry["helpful"], entry["harmful"]) == (0, 0)
    assert isinstance(entry["name"], str) and entry["name"]


def test_SCN_SCORE_006_01_load_dict_with_score_field(project):
    pb = _load_single(project, {"name": "kpt_001", "text": "use types", "score": -3})
    expected = empty_sections()
    expected[OTH] = [{"name": "kpt_001", "text": "use types", "helpful": 0, "harmful": 3}]
    assert pb == {"version": "1.0", "last_updated": None, "sections": expected}
    assert "score" not in pb["sections"][OTH][0]


def test_REQ_SCORE_006_positive_score(project):
    pb = _load_single(project, {"name": "kpt_001", "text": "use types", "score": 4})
    assert pb["sections"][OTH] == [{"name": "kpt_001", "text": "use types", "helpful": 4, "harmful": 0}]


def test_SCN_SCORE_006_02_load_dict_with_score_and_existing_counters(project):
    pb = _load_single(project, {"name": "kpt_001", "text": "use types", "helpful": 3, "harmful": 1, "score": 2})
    expected = empty_sections()
    expected[OTH] = [{"name": "kpt_001", "text": "use types", "helpful": 3, "harmful": 1}]
    assert pb == {"version": "1.0", "last_updated": None, "sections": expected}
    assert "score" not in pb["sections"][OTH][0]


# --------------------------------------------------------------------------- SCN-SCORE-007 (pruning)


def _prune_via_update(entry):
    pb = make_pb({OTH: [entry]})
    return update_playbook_data(pb, {"new_key_points": [], "evaluations": []})


def test_SCN_SCORE_007_01_prune_consistently_harmful_entry():
    result = _prune_via_update(kp("kpt_001", "bad advice", 1, 4))
    assert find(result, "kpt_001") is None
    assert result["sections"] == empty_sections()


def test_SCN_SCORE_007_02_retain_high_harmful_but_higher_helpful():
    result = _prune_via_update(kp("kpt_001", "controversial", 10, 4))
    assert result["sections"][OTH] == [kp("kpt_001", "controversial", 10, 4)]


def test_SCN_SCORE_007_03_retain_zero_evaluation_entry():
    result = _prune_via_update(kp("kpt_001", "new untested", 0, 0))
    assert result["sections"][OTH] == [kp("kpt_001", "new untested", 0, 0)]


def test_SCN_SCORE_007_04_retain_entry_with_harmful_below_floor():
    result = _prune_via_update(kp("kpt_001", "new entry", 0, 2))
    assert result["sections"][OTH] == [kp("kpt_001", "new entry", 0, 2)]


def test_REQ_SCORE_007_evaluation_pushing_over_threshold_prunes_in_same_call():
    pb = make_pb({OTH: [kp("kpt_001", "borderline", 1, 2)]})
    result = update_playbook_data(pb, {"new_key_points": [], "evaluations": [{"name": "kpt_001", "rating": "harmful"}]})
    assert result["sections"] == empty_sections()


# --------------------------------------------------------------------------- SCN-SCORE-008


def test_SCN_SCORE_008_01_template_explains_scoring_semantics():
    t = load_template("playbook.txt")
    assert "{key_points}" in t
    low = t.lower()
    assert "helpful" in low
    assert "harmful" in low
    assert "ratio" in low
    # higher helpful = proven value; higher harmful = problematic
    assert re.search(r"proven|trust|value|reliab", low)
    assert re.search(r"problem|caution|skeptic|unreliab|wrong|mislead|avoid", low)


# --------------------------------------------------------------------------- INV-SCORE


LEGACY_MIX = [
    "bare one",
    {"name": "kpt_002", "text": "no score"},
    {"name": "kpt_003", "text": "neg score", "score": -5},
    {"name": "kpt_004", "text": "pos score", "score": 6},
    {"name": "kpt_005", "text": "zero score", "score": 0},
    {"name": "kpt_006", "text": "both", "helpful": 2, "harmful": 1, "score": -9},
]


def _assert_counters_nonneg(entries):
    for e in entries:
        assert type(e["helpful"]) is int and e["helpful"] >= 0, e
        assert type(e["harmful"]) is int and e["harmful"] >= 0, e


def test_INV_SCORE_001_helpful_counter_non_negative(project):
    write_legacy(project, {"version": "1.0", "key_points": LEGACY_MIX})
    pb = load_playbook()
    _assert_counters_nonneg(all_entries(pb))
    assert find(pb, "kpt_003")["helpful"] == 0
    assert find(pb, "kpt_004")["helpful"] == 6
    save_playbook(pb)
    _assert_counters_nonneg([e for v in read_snapshot(project)["sections"].values() for e in v])


def test_INV_SCORE_002_harmful_counter_non_negative(project):
    write_legacy(project, {"version": "1.0", "key_points": LEGACY_MIX})
    pb = load_playbook()
    _assert_counters_nonneg(all_entries(pb))
    assert find(pb, "kpt_003")["harmful"] == 5
    assert find(pb, "kpt_004")["harmful"] == 0
    assert (find(pb, "kpt_006")["helpful"], find(pb, "kpt_006")["harmful"]) == (2, 1)
    save_playbook(pb)
    _assert_counters_nonneg([e for v in read_snapshot(project)["sections"].values() for e in v])


def test_INV_SCORE_003_zero_evaluation_entries_never_pruned():
    zeros = [kp(f"oth-{i:03d}", f"untested {i}", 0, 0) for i in range(1, 6)]
    pb = make_pb({OTH: zeros, MIS: [kp("mis-001", "bad", 0, 7)], PAT: [kp("pat-001", "new", 0, 0)]})
    result = prune_harmful(pb)
    assert result["sections"][OTH] == zeros
    assert result["sections"][PAT] == [kp("pat-001", "new", 0, 0)]
    assert result["sections"][MIS] == []
    pb2 = make_pb({OTH: zeros})
    assert update_playbook_data(pb2, {"new_key_points": [], "evaluations": []})["sections"][OTH] == zeros


def test_INV_SCORE_004_no_score_field_in_output(project):
    write_legacy(project, {"version": "1.0", "key_points": LEGACY_MIX})
    pb = load_playbook()
    for e in all_entries(pb):
        assert "score" not in e
        assert set(e) == ENTRY_KEYS
    assert "score" not in pb
    save_playbook(pb)
    raw = read_snapshot(project)
    for entries in raw["sections"].values():
        for e in entries:
            assert "score" not in e
            assert set(e) == ENTRY_KEYS
    # a stray score on an in-memory entry is not written either
    pb = load_playbook()
    pb["sections"][OTH][0]["score"] = 42
    save_playbook(pb)
    for entries in read_snapshot(project)["sections"].values():
        for e in entries:
            assert "score" not in e
    for e in all_entries(load_playbook()):
        assert "score" not in e


def test_INV_SCORE_005_migration_round_trip_stability(project):
    write_legacy(project, {"version": "1.0", "last_updated": "2025-12-01T08:00:00", "key_points": LEGACY_MIX})
    first = load_playbook()
    sections_before = copy.deepcopy(first["sections"])
    assert [e["text"] for e in sections_before[OTH]] == [
        "bare one",
        "no score",
        "neg score",
        "pos score",
        "zero score",
        "both",
    ]
    save_playbook(first)
    second = load_playbook()
    assert second["sections"] == sections_before
    assert second["version"] == "1.0"
    assert isinstance(second["last_updated"], str)
    datetime.fromisoformat(second["last_updated"])
