"""Acceptance tests for spec 003: Curator operations (SCN-CUR-*, INV-CUR-*).

Not covered here (they need a language model client, later issue):
SCN-CUR-010-01, SCN-CUR-010-02, SCN-CUR-010-03, SCN-CUR-012-01 (run_curator).
SCN-CUR-001-* and SCN-CUR-016-* test the pure reply parsers instead of the model call.

Scenarios that say "the operation is applied" run through both public operations
paths: apply_structured_operations(pb, ops) and update_playbook_data(pb, {"operations": ops}).
"""

import copy
import json
import re

import pytest

import playbook.api
from playbook import (
    SECTION_SLUGS,
    apply_structured_operations,
    load_template,
    prune_harmful,
    update_playbook_data,
)
from playbook.learner.replies import extract_json, parse_curator_reply, parse_extraction_reply

from tests.spec.helpers import (
    CANON,
    CTX,
    ENTRY_KEYS,
    MIS,
    OTH,
    PAT,
    PREF,
    all_entries,
    diag_files,
    diag_text,
    kp,
    make_pb,
    sections_with,
)

# `project` and `diag_mode` come from conftest.py; every test here runs in a fresh project.
pytestmark = pytest.mark.usefixtures("project")


# --------------------------------------------------------------------------- helpers


def via_apply(pb, ops):
    return apply_structured_operations(pb, ops)


def via_update(pb, ops):
    return update_playbook_data(pb, {"operations": ops, "evaluations": []})


def run_ops(apply_ops, pb, ops):
    """Apply ops through the given path; the caller's dict must never be mutated."""
    before = copy.deepcopy(pb)
    result = apply_ops(pb, ops)
    assert pb == before, "the operations path mutated the caller's playbook"
    assert isinstance(result, dict)
    return result


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(params=[via_apply, via_update], ids=["apply_structured_operations", "update_playbook_data"])
def apply_ops(request):
    return request.param


# --------------------------------------------------------------------------- SCN-CUR-001 (extraction reply parsing)


def test_SCN_CUR_001_01_extract_keypoints_returns_operations():
    reply = json.dumps(
        {
            "evaluations": [{"name": "pat-001", "rating": "helpful"}],
            "operations": [{"type": "ADD", "text": "new insight", "section": "PATTERNS & APPROACHES"}],
        }
    )
    result = parse_extraction_reply(reply)
    assert result["evaluations"] == [{"name": "pat-001", "rating": "helpful"}]
    assert result["operations"] == [{"type": "ADD", "text": "new insight", "section": "PATTERNS & APPROACHES"}]
    assert set(result) <= {"new_key_points", "evaluations", "operations"}
    assert result.get("new_key_points", []) == []


def test_SCN_CUR_001_01_fenced_reply():
    body = {
        "evaluations": [{"name": "pat-001", "rating": "helpful"}],
        "operations": [{"type": "ADD", "text": "new insight", "section": "PATTERNS & APPROACHES"}],
    }
    reply = "Here you go:\n```json\n" + json.dumps(body, indent=2) + "\n```\nDone."
    result = parse_extraction_reply(reply)
    assert result["evaluations"] == body["evaluations"]
    assert result["operations"] == body["operations"]


def test_SCN_CUR_001_02_extract_keypoints_returns_empty_operations():
    reply = json.dumps({"evaluations": [{"name": "pat-001", "rating": "helpful"}], "operations": []})
    result = parse_extraction_reply(reply)
    assert result["evaluations"] == [{"name": "pat-001", "rating": "helpful"}]
    assert "operations" in result
    assert result["operations"] == []


def test_SCN_CUR_001_03_extract_keypoints_with_no_operations_key():
    reply = json.dumps({"new_key_points": ["some new point"], "evaluations": [{"name": "pat-001", "rating": "helpful"}]})
    result = parse_extraction_reply(reply)
    assert result["new_key_points"] == ["some new point"]
    assert result["evaluations"] == [{"name": "pat-001", "rating": "helpful"}]
    assert "operations" not in result


@pytest.mark.parametrize("bad", [None, "string", 42, {}, True], ids=["null", "string", "int", "object", "true"])
def test_SCN_CUR_001_04_extract_keypoints_with_non_list_operations_value(bad):
    reply = json.dumps({"evaluations": [{"name": "pat-001", "rating": "helpful"}], "operations": bad})
    result = parse_extraction_reply(reply)
    assert "operations" not in result
    assert result["evaluations"] == [{"name": "pat-001", "rating": "helpful"}]

    # ... which makes update_playbook_data fall back to the new_key_points path
    reply2 = json.dumps({"new_key_points": ["fallback point"], "evaluations": [], "operations": bad})
    result2 = parse_extraction_reply(reply2)
    assert "operations" not in result2
    pb = make_pb()
    out = update_playbook_data(pb, result2)
    assert out["sections"] == sections_with(OTH=[kp("oth-001", "fallback point", 0, 0)])

    # decision 4: a non-list "operations" handed straight to update_playbook_data is absent too
    pb = make_pb()
    out = update_playbook_data(pb, {"new_key_points": ["direct point"], "evaluations": [], "operations": bad})
    assert out["sections"] == sections_with(OTH=[kp("oth-001", "direct point", 0, 0)])


# --------------------------------------------------------------------------- SCN-CUR-002 (ADD)


def test_SCN_CUR_002_01_add_creates_new_entry_in_target_section(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "use types", 5, 1)]})
    result = run_ops(
        apply_ops, pb, [{"type": "ADD", "text": "prefer composition", "section": "PATTERNS & APPROACHES"}]
    )
    assert result["sections"] == sections_with(
        PAT=[kp("pat-001", "use types", 5, 1), kp("pat-002", "prefer composition", 0, 0)]
    )


def test_SCN_CUR_002_02_add_defaults_to_others_when_section_missing(apply_ops):
    pb = make_pb()
    result = run_ops(apply_ops, pb, [{"type": "ADD", "text": "some insight"}])
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "some insight", 0, 0)])


def test_SCN_CUR_002_03_add_skips_duplicate_text(apply_ops):
    pb = make_pb({OTH: [kp("oth-001", "prefer pathlib", 2, 0)]})
    result = run_ops(apply_ops, pb, [{"type": "ADD", "text": "prefer pathlib", "section": "PATTERNS & APPROACHES"}])
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "prefer pathlib", 2, 0)])


def test_SCN_CUR_002_04_add_skips_empty_text(apply_ops):
    pb = make_pb({OTH: [kp("oth-001", "keep", 1, 0)]})
    ops = [
        {"type": "ADD", "text": "", "section": "OTHERS"},
        {"type": "ADD", "section": "OTHERS"},  # missing text
        {"type": "ADD", "text": "   ", "section": "OTHERS"},  # decision 6: whitespace only is empty
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "keep", 1, 0)])


def test_SCN_CUR_002_05_add_resolves_section_case_insensitively(apply_ops):
    pb = make_pb()
    result = run_ops(apply_ops, pb, [{"type": "ADD", "text": "new tip", "section": "mistakes to avoid"}])
    assert result["sections"] == sections_with(MIS=[kp("mis-001", "new tip", 0, 0)])


# --------------------------------------------------------------------------- SCN-CUR-003 (MERGE)


def test_SCN_CUR_003_01_merge_combines_two_entries(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1), kp("pat-003", "annotate return types", 3, 0)]})
    result = run_ops(
        apply_ops,
        pb,
        [{"type": "MERGE", "source_ids": ["pat-001", "pat-003"], "merged_text": "use complete type annotations"}],
    )
    assert result["sections"] == sections_with(PAT=[kp("pat-004", "use complete type annotations", 8, 1)])


def test_SCN_CUR_003_02_merge_with_explicit_section_override(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "hint A", 2, 0)], OTH: [kp("oth-001", "hint B", 1, 0)]})
    result = run_ops(
        apply_ops,
        pb,
        [
            {
                "type": "MERGE",
                "source_ids": ["pat-001", "oth-001"],
                "merged_text": "combined hint",
                "section": "PATTERNS & APPROACHES",
            }
        ],
    )
    assert result["sections"] == sections_with(PAT=[kp("pat-002", "combined hint", 3, 0)])


def test_SCN_CUR_003_03_merge_with_some_non_existent_source_ids(apply_ops, diag_mode):
    pb = make_pb({PAT: [kp("pat-001", "A", 2, 0), kp("pat-002", "B", 1, 0)]})
    result = run_ops(
        apply_ops, pb, [{"type": "MERGE", "source_ids": ["pat-001", "pat-002", "pat-999"], "merged_text": "combined"}]
    )
    assert result["sections"] == sections_with(PAT=[kp("pat-003", "combined", 3, 0)])
    assert "pat-999" in diag_text(diag_mode, "curator_unknown_id")


def test_SCN_CUR_003_04_merge_skipped_when_fewer_than_2_valid_source_ids(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "A", 2, 0)]})
    result = run_ops(apply_ops, pb, [{"type": "MERGE", "source_ids": ["pat-001", "pat-999"], "merged_text": "combined"}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "A", 2, 0)])


def test_SCN_CUR_003_05_merge_skipped_when_source_ids_has_fewer_than_2_entries(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "A", 2, 0)]})
    ops = [
        {"type": "MERGE", "source_ids": ["pat-001"], "merged_text": "rewritten"},
        {"type": "MERGE", "source_ids": [], "merged_text": "rewritten"},
        {"type": "MERGE", "merged_text": "rewritten"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "A", 2, 0)])


def test_REQ_CUR_003_merge_skipped_when_merged_text_empty(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "A", 2, 0), kp("pat-002", "B", 1, 0)]})
    ops = [
        {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": ""},
        {"type": "MERGE", "source_ids": ["pat-001", "pat-002"]},
        {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": "  "},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "A", 2, 0), kp("pat-002", "B", 1, 0)])


def test_SCN_CUR_003_06_merge_inherits_section_from_first_valid_source_id(apply_ops):
    pb = make_pb({MIS: [kp("mis-001", "avoid globals", 3, 0)], OTH: [kp("oth-001", "no bare except", 1, 0)]})
    result = run_ops(
        apply_ops, pb, [{"type": "MERGE", "source_ids": ["mis-001", "oth-001"], "merged_text": "combined advice"}]
    )
    assert result["sections"] == sections_with(MIS=[kp("mis-002", "combined advice", 4, 0)])


def test_SCN_CUR_003_07_merge_where_first_source_deleted_by_prior_op(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "A", 2, 0), kp("pat-002", "B", 1, 0), kp("pat-003", "C", 3, 0)]})
    ops = [
        {"type": "DELETE", "target_id": "pat-001", "reason": "obsolete"},
        {"type": "MERGE", "source_ids": ["pat-001", "pat-002", "pat-003"], "merged_text": "combined"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(PAT=[kp("pat-004", "combined", 4, 0)])


def test_SCN_CUR_003_08_merge_skipped_when_all_source_ids_non_existent(apply_ops, diag_mode):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    result = run_ops(apply_ops, pb, [{"type": "MERGE", "source_ids": ["pat-999", "pat-888"], "merged_text": "combined"}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])
    text = diag_text(diag_mode, "curator_unknown_id")
    assert "pat-999" in text
    assert "pat-888" in text


def test_DECISION_1_merge_with_invalid_section_goes_to_first_valid_source_section(apply_ops):
    for bad_section in ["NOT A SECTION", "", None, 5]:
        pb = make_pb({CTX: [kp("ctx-001", "py311", 1, 0)], OTH: [kp("oth-001", "uv", 2, 0)]})
        op = {"type": "MERGE", "source_ids": ["ctx-001", "oth-001"], "merged_text": "py311 with uv"}
        op["section"] = bad_section
        result = run_ops(apply_ops, pb, [op])
        assert result["sections"] == sections_with(CTX=[kp("ctx-002", "py311 with uv", 3, 0)]), bad_section


def test_REQ_CUR_003_merge_section_resolved_case_insensitively(apply_ops):
    pb = make_pb({CTX: [kp("ctx-001", "py311", 1, 0)], OTH: [kp("oth-001", "uv", 2, 0)]})
    result = run_ops(
        apply_ops,
        pb,
        [{"type": "MERGE", "source_ids": ["ctx-001", "oth-001"], "merged_text": "m", "section": " user preferences "}],
    )
    assert result["sections"] == sections_with(PREF=[kp("pref-001", "m", 3, 0)])


# --------------------------------------------------------------------------- SCN-CUR-004 (DELETE)


def test_SCN_CUR_004_01_delete_removes_entry(apply_ops, diag_mode):
    pb = make_pb({MIS: [kp("mis-001", "bad advice", 0, 2)], OTH: [kp("oth-001", "stay", 0, 0)]})
    result = run_ops(
        apply_ops, pb, [{"type": "DELETE", "target_id": "mis-001", "reason": "contradicts project standards"}]
    )
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "stay", 0, 0)])
    for e in all_entries(result):
        assert set(e) == ENTRY_KEYS  # the reason is not stored
    assert "reason" not in result
    text = diag_text(diag_mode, "curator_delete")
    assert "mis-001" in text
    assert "bad advice" in text
    assert "contradicts project standards" in text


def test_SCN_CUR_004_02_delete_skips_non_existent_id(apply_ops, diag_mode, capsys):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    capsys.readouterr()
    result = run_ops(apply_ops, pb, [{"type": "DELETE", "target_id": "pat-999", "reason": "cleanup"}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "pat-999" in line]) == 1, err
    text = diag_text(diag_mode, "curator_unknown_id")
    assert "pat-999" in text
    assert "DELETE" in text


def test_SCN_CUR_004_03_delete_with_empty_target_id(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    ops = [
        {"type": "DELETE", "target_id": "", "reason": "cleanup"},
        {"type": "DELETE", "reason": "cleanup"},
        {"type": "DELETE", "target_id": None, "reason": "cleanup"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])


# --------------------------------------------------------------------------- SCN-CUR-005 (order, atomicity)


def test_SCN_CUR_005_01_sequential_processing_delete_before_merge(apply_ops):
    pb = make_pb({OTH: [kp("oth-001", "A", 1, 0), kp("oth-002", "B", 2, 0), kp("oth-003", "C", 3, 0)]})
    ops = [
        {"type": "DELETE", "target_id": "oth-001", "reason": "outdated"},
        {"type": "MERGE", "source_ids": ["oth-002", "oth-003"], "merged_text": "combined BC"},
    ]
    result = run_ops(apply_ops, pb, ops)
    # decision 2: the MERGE name is chosen before the sources are removed (max oth-003 -> oth-004)
    assert result["sections"] == sections_with(OTH=[kp("oth-004", "combined BC", 5, 0)])


def test_SCN_CUR_005_02_add_then_merge_referencing_new_entry(apply_ops):
    pb = make_pb({OTH: [kp("oth-001", "prefer pathlib", 2, 0)]})
    ops = [
        {"type": "ADD", "text": "use structured logging", "section": "OTHERS"},
        {
            "type": "MERGE",
            "source_ids": ["oth-002", "oth-001"],
            "merged_text": "prefer pathlib and use structured logging for all file operations",
        },
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(
        OTH=[kp("oth-003", "prefer pathlib and use structured logging for all file operations", 2, 0)]
    )


def _boom(*args, **kwargs):
    raise RuntimeError("injected failure")


def test_SCN_CUR_005_03_exception_rollback_returns_original_playbook(monkeypatch):
    monkeypatch.setattr(playbook.api, "_apply_curator_operations", _boom)
    pb = make_pb({PAT: [kp("pat-001", "A", 5, 1)]})
    before = copy.deepcopy(pb)
    result = update_playbook_data(pb, {"operations": [{"type": "ADD", "text": "will fail"}], "evaluations": []})
    assert result == before
    assert pb == before
    assert result["sections"][PAT] == [kp("pat-001", "A", 5, 1)]
    assert all(e["text"] != "will fail" for e in all_entries(result))


def test_SCN_CUR_005_04_skipped_operations_do_not_trigger_rollback(apply_ops):
    pb = make_pb({OTH: [kp("oth-001", "keep me", 1, 0)]})
    ops = [
        {"type": "DELETE", "target_id": "nonexistent", "reason": "cleanup"},
        {"type": "ADD", "text": "new entry", "section": "OTHERS"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "keep me", 1, 0), kp("oth-002", "new entry", 0, 0)])


# --------------------------------------------------------------------------- SCN-CUR-007 (reflection prompt)


def test_SCN_CUR_007_01_prompt_includes_entry_ids_and_operation_examples():
    t = load_template("reflection.txt")
    assert "operations" in t
    assert "{playbook}" in t
    assert re.search(r'"type"\s*:\s*"ADD"', t)
    assert re.search(r'"type"\s*:\s*"MERGE"', t)
    assert re.search(r'"type"\s*:\s*"DELETE"', t)
    assert re.search(r'"source_ids"\s*:\s*\[', t)
    assert re.search(r'"merged_text"\s*:', t)
    assert re.search(r'"target_id"\s*:', t)
    assert re.search(r'"reason"\s*:', t)
    assert re.search(r'"section"\s*:', t)
    assert re.search(r'"operations"\s*:\s*\[\s*\]', t), "template must allow \"operations\": []"
    assert any(re.search(r"\b10\b", line) and "operation" in line.lower() for line in t.splitlines()), (
        "template must state a maximum of 10 operations"
    )
    assert "evaluations" in t


def test_REQ_SECT_004_reflection_template_lists_sections():
    t = load_template("reflection.txt")
    for name in CANON:  # exact canonical, case-sensitive names
        assert name in t
    assert "section" in t.lower()
    assert re.search(r'"text"\s*:', t)
    assert re.search(r'"section"\s*:\s*"(PATTERNS & APPROACHES|MISTAKES TO AVOID|USER PREFERENCES|PROJECT CONTEXT|OTHERS)"', t)


# --------------------------------------------------------------------------- SCN-CUR-008 (precedence)


def test_SCN_CUR_008_01_operations_key_present_new_key_points_ignored():
    pb = make_pb()
    before = copy.deepcopy(pb)
    result = update_playbook_data(
        pb,
        {
            "operations": [{"type": "ADD", "text": "from ops", "section": "OTHERS"}],
            "new_key_points": ["from nkp"],
            "evaluations": [],
        },
    )
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "from ops", 0, 0)])
    assert all(e["text"] != "from nkp" for e in all_entries(result))
    assert pb == before


def test_SCN_CUR_008_02_operations_key_absent_new_key_points_used():
    pb = make_pb()
    result = update_playbook_data(pb, {"new_key_points": ["legacy point"], "evaluations": []})
    assert result is pb
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "legacy point", 0, 0)])


def test_SCN_CUR_008_03_empty_operations_list_new_key_points_still_ignored():
    pb = make_pb({PAT: [kp("pat-001", "A", 5, 1)]})
    before = copy.deepcopy(pb)
    result = update_playbook_data(
        pb, {"operations": [], "new_key_points": ["should not be added"], "evaluations": []}
    )
    assert result["sections"] == before["sections"]
    assert all(e["text"] != "should not be added" for e in all_entries(result))
    # decision 7: with an "operations" key the caller's dict is never mutated and a new dict is returned
    assert pb == before
    assert result is not pb


# --------------------------------------------------------------------------- SCN-CUR-009 (validation, truncation)


def _adds(n):
    return [{"type": "ADD", "text": f"tip {i}", "section": "OTHERS"} for i in range(n)]


def test_SCN_CUR_009_01_operations_truncated_to_10(apply_ops, diag_mode):
    result = run_ops(apply_ops, make_pb(), _adds(15))
    assert result["sections"] == sections_with(OTH=[kp(f"oth-{i + 1:03d}", f"tip {i}", 0, 0) for i in range(10)])
    text = diag_text(diag_mode, "curator_truncation")
    assert re.search(r"\b15\b", text), text
    assert re.search(r"\b10\b", text), text


def test_SCN_CUR_009_03_exactly_10_operations_no_truncation(apply_ops, diag_mode):
    result = run_ops(apply_ops, make_pb(), _adds(10))
    assert result["sections"] == sections_with(OTH=[kp(f"oth-{i + 1:03d}", f"tip {i}", 0, 0) for i in range(10)])
    assert diag_files(diag_mode, "curator_truncation") == []


def test_SCN_CUR_009_04_exactly_11_operations_truncation_to_10(apply_ops, diag_mode):
    result = run_ops(apply_ops, make_pb(), _adds(11))
    assert result["sections"] == sections_with(OTH=[kp(f"oth-{i + 1:03d}", f"tip {i}", 0, 0) for i in range(10)])
    assert all(e["text"] != "tip 10" for e in all_entries(result))
    text = diag_text(diag_mode, "curator_truncation")
    assert re.search(r"\b11\b", text), text
    assert re.search(r"\b10\b", text), text


def test_SCN_CUR_009_02_unknown_or_missing_operation_type_skipped(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    ops = [
        {"type": "REPLACE", "target_id": "pat-001", "text": "rewritten"},
        {"target_id": "pat-001", "text": "rewritten"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])


def test_DECISION_5_non_object_and_lowercase_type_items_skipped_rest_applies(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    ops = [
        "ADD something",
        42,
        None,
        ["ADD", "x"],
        {"type": "add", "text": "lowercase type is unknown"},
        {"type": "update", "target_id": "pat-001", "text": "lowercase update"},
        {"type": "ADD", "text": "real one"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(
        PAT=[kp("pat-001", "use type hints", 5, 1)], OTH=[kp("oth-001", "real one", 0, 0)]
    )


# --------------------------------------------------------------------------- SCN-CUR-011 (curator prompt)


def test_SCN_CUR_011_01_curator_prompt_template_structure():
    t = load_template("curator.txt")
    placeholders = set(re.findall(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})", t))
    assert len(placeholders) >= 2, f"need placeholders for reflector output and playbook, got {placeholders}"
    assert any("playbook" in p for p in placeholders), placeholders
    assert not any("transcript" in p.lower() for p in placeholders), placeholders
    assert re.search(r'"reasoning"', t)
    assert re.search(r'"operations"', t)
    for op_type in ("ADD", "UPDATE", "DELETE", "MERGE"):
        assert re.search(r'"type"\s*:\s*"%s"' % op_type, t), op_type
    assert re.search(r'"target_id"\s*:', t)
    assert re.search(r'"source_ids"\s*:\s*\[', t)
    assert re.search(r'"merged_text"\s*:', t)
    assert re.search(r'"operations"\s*:\s*\[\s*\]', t), "template must allow \"operations\": []"
    assert any(re.search(r"\b10\b", line) and "operation" in line.lower() for line in t.splitlines()), (
        "template must state a maximum of 10 operations"
    )


# --------------------------------------------------------------------------- SCN-CUR-013 (UPDATE)


def test_SCN_CUR_013_01_update_revises_entry_text(apply_ops, diag_mode):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    new_text = "use type hints for all function parameters and return values"
    result = run_ops(apply_ops, pb, [{"type": "UPDATE", "target_id": "pat-001", "text": new_text}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", new_text, 5, 1)])
    assert "pat-001" in diag_text(diag_mode, "curator_update")


def test_SCN_CUR_013_02_update_skips_non_existent_target_id(apply_ops, diag_mode, capsys):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    capsys.readouterr()
    result = run_ops(apply_ops, pb, [{"type": "UPDATE", "target_id": "pat-999", "text": "new text"}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "pat-999" in line]) == 1, err
    assert "pat-999" in diag_text(diag_mode, "curator_unknown_id")


def test_SCN_CUR_013_03_update_skips_empty_target_id(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    result = run_ops(apply_ops, pb, [{"type": "UPDATE", "target_id": "", "text": "new text"}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])


def test_SCN_CUR_013_04_update_skips_empty_text(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    result = run_ops(apply_ops, pb, [{"type": "UPDATE", "target_id": "pat-001", "text": ""}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])


# --------------------------------------------------------------------------- SCN-CUR-014 (apply_structured_operations)


def test_SCN_CUR_014_01_apply_structured_operations_applies_with_deep_copy():
    pb = make_pb({PAT: [kp("pat-001", "A", 5, 1)]})
    before = copy.deepcopy(pb)
    result = apply_structured_operations(pb, [{"type": "ADD", "text": "new insight", "section": "OTHERS"}])
    assert result["sections"] == sections_with(
        PAT=[kp("pat-001", "A", 5, 1)], OTH=[kp("oth-001", "new insight", 0, 0)]
    )
    assert pb == before
    assert result is not pb
    # no shared nested state with the caller's dict
    result["sections"][PAT][0]["helpful"] = 99
    assert pb["sections"][PAT][0]["helpful"] == 5


def test_SCN_CUR_014_02_apply_structured_operations_rollback_on_exception(monkeypatch):
    monkeypatch.setattr(playbook.api, "_apply_curator_operations", _boom)
    pb = make_pb({PAT: [kp("pat-001", "A", 5, 1)]})
    before = copy.deepcopy(pb)
    result = apply_structured_operations(pb, [{"type": "ADD", "text": "will fail", "section": "OTHERS"}])
    assert result is pb
    assert pb == before


def test_SCN_CUR_014_03_apply_structured_operations_supports_update():
    pb = make_pb({PAT: [kp("pat-001", "old text", 3, 0)]})
    before = copy.deepcopy(pb)
    result = apply_structured_operations(pb, [{"type": "UPDATE", "target_id": "pat-001", "text": "revised text"}])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "revised text", 3, 0)])
    assert pb == before


def test_SCN_CUR_014_04_empty_operations_list_returns_original_reference():
    pb = make_pb({PAT: [kp("pat-001", "A", 5, 1)]})
    before = copy.deepcopy(pb)
    result = apply_structured_operations(pb, [])
    assert result is pb
    assert pb == before
    assert result["sections"][PAT] == [kp("pat-001", "A", 5, 1)]


def test_REQ_CUR_014_apply_structured_operations_does_not_prune():
    # pruning is the separate prune_harmful(); an UPDATE of a harmful entry leaves it in place
    pb = make_pb({MIS: [kp("mis-001", "bad", 0, 5)]})
    result = apply_structured_operations(pb, [{"type": "UPDATE", "target_id": "mis-001", "text": "still bad"}])
    assert result["sections"] == sections_with(MIS=[kp("mis-001", "still bad", 0, 5)])


def test_REQ_CUR_014_update_playbook_data_prunes_after_operations():
    # Pruning Interaction Note: a merge whose summed counters meet the rule is pruned in the same cycle
    pb = make_pb({MIS: [kp("mis-001", "a", 0, 2), kp("mis-002", "b", 1, 2)]})
    result = update_playbook_data(
        pb, {"operations": [{"type": "MERGE", "source_ids": ["mis-001", "mis-002"], "merged_text": "ab"}], "evaluations": []}
    )
    assert result["sections"] == sections_with()


# --------------------------------------------------------------------------- SCN-CUR-015 (prune_harmful)


def test_SCN_CUR_015_01_prune_harmful_removes_entries_meeting_threshold():
    pb = make_pb({MIS: [kp("mis-001", "bad advice", 1, 4)], OTH: [kp("oth-001", "good tip", 5, 0)]})
    result = prune_harmful(pb)
    assert result is pb
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "good tip", 5, 0)])


def test_SCN_CUR_015_02_prune_harmful_preserves_zero_evaluation_entries():
    pb = make_pb({OTH: [kp("oth-001", "new entry", 0, 0)]})
    result = prune_harmful(pb)
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "new entry", 0, 0)])


def test_SCN_CUR_015_03_prune_harmful_equal_counters_not_pruned():
    pb = make_pb({PAT: [kp("pat-001", "controversial", 3, 3)]})
    result = prune_harmful(pb)
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "controversial", 3, 3)])


def test_SCN_CUR_015_04_prune_harmful_logs_pruned_entries(diag_mode, capsys):
    text = "bad advice that is very long and should be truncated in the log output"
    pb = make_pb({MIS: [kp("mis-001", text, 0, 5)], OTH: [kp("oth-001", "fine", 0, 0)]})
    capsys.readouterr()
    result = prune_harmful(pb)
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "fine", 0, 0)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "mis-001" in line]
    assert len(lines) == 1, err
    line = lines[0]
    assert text[:80] in line
    assert re.search(r"helpful\D{0,3}0\b", line), line
    assert re.search(r"harmful\D{0,3}5\b", line), line
    assert "oth-001" not in err
    assert "mis-001" in diag_text(diag_mode, "playbook_pruning")


def test_REQ_CUR_015_prune_log_truncates_text_to_80_chars(capsys):
    long_text = "L" * 40 + "M" * 40 + "TAIL-THAT-MUST-NOT-APPEAR" * 4
    pb = make_pb({PAT: [kp("pat-001", long_text, 1, 9)]})
    capsys.readouterr()
    prune_harmful(pb)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "pat-001" in line]
    assert len(lines) == 1, err
    assert long_text[:80] in lines[0]
    assert "TAIL-THAT-MUST-NOT-APPEAR" not in err


def test_REQ_CUR_015_no_prune_no_log_no_diagnostic(diag_mode, capsys):
    pb = make_pb({OTH: [kp("oth-001", "fine", 3, 3)]})
    capsys.readouterr()
    prune_harmful(pb)
    assert "oth-001" not in capsys.readouterr().err
    assert diag_files(diag_mode, "playbook_pruning") == []


# --------------------------------------------------------------------------- SCN-CUR-016 (JSON extraction)


def test_SCN_CUR_016_01_json_in_prose_balanced_brace_extraction():
    reply = (
        "Here is my analysis of the playbook:\n\n"
        '{"reasoning": "pat-001 has been harmful", "operations": [{"type": "DELETE", "target_id": "pat-001", '
        '"reason": "consistently harmful"}]}\n\n'
        "I hope this helps improve the playbook."
    )
    expected = {
        "reasoning": "pat-001 has been harmful",
        "operations": [{"type": "DELETE", "target_id": "pat-001", "reason": "consistently harmful"}],
    }
    assert extract_json(reply) == expected
    assert parse_curator_reply(reply) == expected


def test_SCN_CUR_016_02_json_code_fence_extraction():
    reply = '```json\n{"reasoning": "No changes needed", "operations": []}\n```'
    expected = {"reasoning": "No changes needed", "operations": []}
    assert extract_json(reply) == expected
    assert parse_curator_reply(reply) == expected


def test_REQ_CUR_016_strategy_order_and_fallbacks():
    # 1. ```json fence wins over a bare fence and over braces in prose
    reply = 'prose {"a": 0}\n```\n{"a": 2}\n```\n```json\n{"a": 1}\n```'
    assert extract_json(reply) == {"a": 1}
    # 2. bare fence wins over braces in prose
    reply = 'prose {"a": 0} more\n```\n{"a": 2}\n```'
    assert extract_json(reply) == {"a": 2}
    # 3. balanced braces with nesting and braces inside the prose after it
    reply = 'Result: {"a": {"b": [1, {"c": 2}]}} trailing } junk'
    assert extract_json(reply) == {"a": {"b": [1, {"c": 2}]}}
    # 4. raw json
    assert extract_json('  {"x": [1, 2]}  ') == {"x": [1, 2]}
    # nothing parseable
    assert extract_json("no json here") is None
    assert extract_json("") is None
    assert extract_json("{broken") is None


def test_REQ_CUR_016_curator_reply_defaults_and_unparseable():
    assert parse_curator_reply("I cannot help with that.") == {"reasoning": "", "operations": []}
    assert parse_curator_reply("") == {"reasoning": "", "operations": []}
    assert parse_curator_reply("```json\n{not valid}\n```") == {"reasoning": "", "operations": []}
    # a partial result is accepted, with defaults for the missing keys
    assert parse_curator_reply('{"reasoning": "only reasoning"}') == {"reasoning": "only reasoning", "operations": []}
    assert parse_curator_reply('{"operations": [{"type": "ADD", "text": "t"}]}') == {
        "reasoning": "",
        "operations": [{"type": "ADD", "text": "t"}],
    }


# --------------------------------------------------------------------------- INV-CUR


def test_INV_CUR_001_deep_copy_isolation():
    pb = make_pb(
        {
            PAT: [kp("pat-001", "A", 5, 1), kp("pat-002", "B", 1, 0)],
            MIS: [kp("mis-001", "M", 0, 2)],
            OTH: [kp("oth-001", "O", 2, 0)],
        }
    )
    before = copy.deepcopy(pb)
    result = update_playbook_data(
        pb,
        {
            "operations": [
                {"type": "ADD", "text": "added", "section": "PROJECT CONTEXT"},
                {"type": "UPDATE", "target_id": "oth-001", "text": "O revised"},
                {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": "AB"},
                {"type": "DELETE", "target_id": "mis-001", "reason": "r"},
            ],
            "evaluations": [{"name": "oth-001", "rating": "helpful"}, {"name": "ctx-001", "rating": "harmful"}],
            "new_key_points": ["ignored"],
        },
    )
    assert pb == before  # neither the operations nor the evaluations touched the caller's dict
    assert result["sections"] == sections_with(
        PAT=[kp("pat-003", "AB", 6, 1)],
        CTX=[kp("ctx-001", "added", 0, 1)],
        OTH=[kp("oth-001", "O revised", 3, 0)],
    )
    result["sections"][OTH][0]["text"] = "changed after the fact"
    assert pb == before


def test_INV_CUR_002_no_crash_on_invalid_operations(apply_ops):
    pb = make_pb({PAT: [kp("pat-001", "A", 2, 0), kp("pat-002", "B", 1, 0)]})
    ops = [
        {"type": "ADD", "text": 123},
        {"type": "ADD", "text": None},
        {"type": "ADD", "text": ["list"]},
        {"type": "UPDATE", "target_id": "pat-001", "text": {"nested": "dict"}},
        {"type": "UPDATE", "target_id": ["pat-001"], "text": "x"},
        {"type": "DELETE", "target_id": 7},
        {"type": "DELETE", "target_id": {"id": "pat-001"}},
        {"type": "MERGE", "source_ids": "pat-001,pat-002", "merged_text": "m"},
        {"type": "MERGE", "source_ids": [["pat-001"], {"a": 1}], "merged_text": "m"},
        {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": 5},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "A", 2, 0), kp("pat-002", "B", 1, 0)])
    # and an operations list of pure junk, longer than 10
    junk = [None, 1, "x", [], {}, {"type": None}, {"type": 3}, {"type": ["ADD"]}, {"type": "ADD", "section": {}}] * 2
    result = run_ops(apply_ops, pb, junk)
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "A", 2, 0), kp("pat-002", "B", 1, 0)])


def test_INV_CUR_003_counter_non_negativity_preserved_through_merge():
    pb = make_pb({OTH: [kp("oth-001", "a", 0, 0), kp("oth-002", "b", 2, 5), kp("oth-003", "c", 7, 1)]})
    result = apply_structured_operations(
        pb, [{"type": "MERGE", "source_ids": ["oth-001", "oth-002", "oth-003"], "merged_text": "abc"}]
    )
    assert result["sections"] == sections_with(OTH=[kp("oth-004", "abc", 9, 6)])
    for e in all_entries(result):
        assert e["helpful"] >= 0 and e["harmful"] >= 0


def test_INV_CUR_004_section_names_canonical_after_operations(apply_ops):
    pb = make_pb({OTH: [kp("oth-001", "a", 1, 0), kp("oth-002", "b", 1, 0)]})
    ops = [
        {"type": "ADD", "text": "t1", "section": "BRAND NEW"},
        {"type": "ADD", "text": "t2", "section": ""},
        {"type": "ADD", "text": "t3", "section": None},
        {"type": "ADD", "text": "t4", "section": 5},
        {"type": "ADD", "text": "t5", "section": "project context"},
        {"type": "MERGE", "source_ids": ["oth-001", "oth-002"], "merged_text": "ab", "section": "ELSEWHERE"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert set(result["sections"]) == set(CANON)
    assert result["sections"] == sections_with(
        CTX=[kp("ctx-001", "t5", 0, 0)],
        OTH=[
            kp("oth-003", "t1", 0, 0),
            kp("oth-004", "t2", 0, 0),
            kp("oth-005", "t3", 0, 0),
            kp("oth-006", "t4", 0, 0),
            kp("oth-007", "ab", 2, 0),
        ],
    )


def test_INV_CUR_005_operations_bounded_by_10(apply_ops):
    # the list is cut to its first 10 items before validation: invalid items count too
    ops = [{"type": "DELETE", "target_id": f"nope-{i}"} for i in range(10)] + _adds(2)
    result = run_ops(apply_ops, make_pb(), ops)
    assert result["sections"] == sections_with()
    ops = [{"type": "ADD", "text": ""}] * 9 + _adds(3)
    result = run_ops(apply_ops, make_pb(), ops)
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "tip 0", 0, 0)])


def test_INV_CUR_006_precedence_rule_prevents_double_processing():
    pb = make_pb()
    result = update_playbook_data(
        pb,
        {
            "operations": [{"type": "ADD", "text": ""}, {"type": "DELETE", "target_id": "x"}],
            "new_key_points": ["nkp one", {"text": "nkp two", "section": "OTHERS"}],
            "evaluations": [],
        },
    )
    assert result["sections"] == sections_with()
    result = update_playbook_data(
        make_pb(),
        {
            "operations": [{"type": "ADD", "text": "same text"}],
            "new_key_points": ["same text", "other"],
            "evaluations": [],
        },
    )
    assert result["sections"] == sections_with(OTH=[kp("oth-001", "same text", 0, 0)])


def test_INV_CUR_007_update_preserves_entry_identity(apply_ops):
    prefs = [kp("pref-001", "first", 1, 0), kp("pref-002", "second", 4, 2), kp("pref-003", "third", 0, 1)]
    pb = make_pb({PREF: prefs, OTH: [kp("oth-001", "o", 0, 0)]})
    result = run_ops(apply_ops, pb, [{"type": "UPDATE", "target_id": "pref-002", "text": "second, revised"}])
    assert result["sections"] == sections_with(
        PREF=[prefs[0], kp("pref-002", "second, revised", 4, 2), prefs[2]],
        OTH=[kp("oth-001", "o", 0, 0)],
    )


@pytest.mark.parametrize(
    "op",
    [
        {"type": "UPDATE", "text": "new"},
        {"type": "UPDATE", "target_id": "", "text": "new"},
        {"type": "UPDATE", "target_id": None, "text": "new"},
        {"type": "UPDATE", "target_id": "pat-001"},
        {"type": "UPDATE", "target_id": "pat-001", "text": ""},
        {"type": "UPDATE", "target_id": "pat-001", "text": None},
        {"type": "UPDATE", "target_id": "pat-001", "text": "   "},
    ],
    ids=["no-target", "empty-target", "null-target", "no-text", "empty-text", "null-text", "blank-text"],
)
def test_INV_CUR_009_update_validates_both_fields(apply_ops, op):
    pb = make_pb({PAT: [kp("pat-001", "use type hints", 5, 1)]})
    result = run_ops(apply_ops, pb, [op])
    assert result["sections"] == sections_with(PAT=[kp("pat-001", "use type hints", 5, 1)])


def test_INV_CUR_010_apply_structured_operations_deep_copy_isolation(monkeypatch):
    pb = make_pb({PAT: [kp("pat-001", "A", 5, 1), kp("pat-002", "B", 0, 0)], OTH: [kp("oth-001", "O", 1, 1)]})
    before = copy.deepcopy(pb)
    ops = [
        {"type": "UPDATE", "target_id": "oth-001", "text": "O2"},
        {"type": "DELETE", "target_id": "pat-002"},
        {"type": "ADD", "text": "N", "section": "PATTERNS & APPROACHES"},
        {"type": "MERGE", "source_ids": ["pat-001", "oth-001"], "merged_text": "AO"},
    ]
    result = apply_structured_operations(pb, ops)
    assert pb == before
    assert result is not pb
    got = {name: [(e["text"], e["helpful"], e["harmful"]) for e in entries] for name, entries in result["sections"].items()}
    assert got == sections_with(PAT=[("N", 0, 0), ("AO", 6, 2)])
    for name in CANON:
        assert result["sections"][name] is not pb["sections"][name]
    monkeypatch.setattr(playbook.api, "_apply_curator_operations", _boom)
    assert apply_structured_operations(pb, ops) is pb
    assert pb == before


PRUNE_TABLE = [
    (0, 0, False),
    (0, 2, False),
    (0, 3, True),
    (1, 4, True),
    (10, 4, False),
    (3, 3, False),
    (2, 3, True),
    (4, 5, True),
    (5, 5, False),
    (100, 99, False),
]


@pytest.mark.parametrize("helpful, harmful, pruned", PRUNE_TABLE)
def test_INV_CUR_011_prune_harmful_thresholds_identical_to_baseline(helpful, harmful, pruned):
    entry = kp("mis-001", "candidate", helpful, harmful)
    keep = kp("oth-001", "keeper", 0, 0)

    pb1 = make_pb({MIS: [entry], OTH: [keep]})
    r1 = prune_harmful(pb1)
    pb2 = make_pb({MIS: [entry], OTH: [keep]})
    r2 = update_playbook_data(pb2, {"new_key_points": [], "evaluations": []})
    pb3 = make_pb({MIS: [entry], OTH: [keep]})
    r3 = update_playbook_data(pb3, {"operations": [], "evaluations": []})

    expected = sections_with(MIS=[] if pruned else [entry], OTH=[keep])
    assert r1["sections"] == expected
    assert r2["sections"] == expected
    assert r3["sections"] == expected


def test_REQ_CUR_002_deleted_ids_are_not_reissued_within_a_batch(apply_ops):
    # REQ-CUR-002 names new entries with the section's slug; the log never reissues an ID it has
    # issued in that section (issue #2: an ID names one key point for its whole life), so after
    # pat-002 is deleted the next ADD gets pat-003, and the MERGE that follows pat-004.
    pb = make_pb({PAT: [kp("pat-001", "A", 5, 1), kp("pat-002", "B", 0, 0)], OTH: [kp("oth-001", "O", 1, 1)]})
    ops = [
        {"type": "UPDATE", "target_id": "oth-001", "text": "O2"},
        {"type": "DELETE", "target_id": "pat-002"},
        {"type": "ADD", "text": "N", "section": "PATTERNS & APPROACHES"},
        {"type": "MERGE", "source_ids": ["pat-001", "oth-001"], "merged_text": "AO"},
    ]
    result = run_ops(apply_ops, pb, ops)
    assert result["sections"] == sections_with(PAT=[kp("pat-003", "N", 0, 0), kp("pat-004", "AO", 6, 2)])


def test_SECTION_SLUGS_used_for_every_generated_id(apply_ops):
    ops = [{"type": "ADD", "text": f"in {name}", "section": name} for name in CANON]
    result = run_ops(apply_ops, make_pb(), ops)
    for name in CANON:
        assert result["sections"][name] == [kp(f"{SECTION_SLUGS[name]}-001", f"in {name}", 0, 0)]
