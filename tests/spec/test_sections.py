"""Acceptance tests for spec 000/001/004: the Sections module (SCN-SECT-*, INV-SECT-*).

Every scenario of /work/shared/spec/000_*.txt is one test named after its id.
Binding decisions of /work/shared/spec/README.md are tested as DECISION_* tests.
"""

import copy
import re
from datetime import datetime

import pytest

from playbook import (
    SECTION_SLUGS,
    format_playbook,
    generate_keypoint_name,
    get_project_dir,
    is_diagnostic_mode,
    load_playbook,
    load_template,
    resolve_section,
    save_diagnostic,
    save_playbook,
    update_playbook_data,
)
from playbook.learner.replies import build_playbook_dict

from tests.spec.helpers import (
    CANON,
    CTX,
    ENTRY_KEYS,
    MIS,
    OTH,
    PAT,
    PREF,
    claude_dir,
    diag_files,
    diag_text,
    empty_sections,
    kp,
    make_pb,
    read_snapshot,
    rendered_candidates,
    write_legacy,
)

# `project` and `diag_mode` come from conftest.py; every test here runs in a fresh project.
pytestmark = pytest.mark.usefixtures("project")


# --------------------------------------------------------------------------- helpers


def entry_line(e):
    return f"[{e['name']}] helpful={e['helpful']} harmful={e['harmful']} :: {e['text']}"


# --------------------------------------------------------------------------- REQ-SECT-010


def test_REQ_SECT_010_section_slugs_constant_and_order():
    assert isinstance(SECTION_SLUGS, dict)
    assert list(SECTION_SLUGS.items()) == [
        ("PATTERNS & APPROACHES", "pat"),
        ("MISTAKES TO AVOID", "mis"),
        ("USER PREFERENCES", "pref"),
        ("PROJECT CONTEXT", "ctx"),
        ("OTHERS", "oth"),
    ]


# --------------------------------------------------------------------------- SCN-SECT-002


def test_SCN_SECT_002_01_generate_first_id_for_empty_section():
    assert generate_keypoint_name([], "pat") == "pat-001"


def test_SCN_SECT_002_02_generate_next_id_after_existing_entries():
    entries = [kp("pat-001", "a", 1, 0), kp("pat-003", "b", 0, 0)]
    before = copy.deepcopy(entries)
    assert generate_keypoint_name(entries, "pat") == "pat-004"
    assert entries == before  # pure: the section is not modified


def test_SCN_SECT_002_03_legacy_kpt_ids_ignored_in_counter():
    entries = [kp("kpt_001", "a"), kp("kpt_005", "b"), kp("oth-002", "c")]
    assert generate_keypoint_name(entries, "oth") == "oth-003"


def test_REQ_SECT_002_other_slugs_do_not_count():
    # only ^{slug}-(\d+)$ counts: other prefixes and near-misses are ignored
    entries = [kp("pat-007", "a"), kp("mis-009", "b"), kp("oth-004x", "c"), kp("xoth-005", "d")]
    assert generate_keypoint_name(entries, "oth") == "oth-001"
    assert generate_keypoint_name(entries, "mis") == "mis-010"


# --------------------------------------------------------------------------- SCN-SECT-003


def test_SCN_SECT_003_01_format_playbook_with_multiple_sections():
    pb = make_pb(
        {
            PAT: [kp("pat-001", "use type hints", 5, 1)],
            MIS: [],
            PREF: [kp("pref-001", "prefer pathlib", 2, 0)],
            CTX: [],
            OTH: [kp("kpt_001", "legacy point", 0, 0)],
        }
    )
    block = (
        "## PATTERNS & APPROACHES\n"
        "[pat-001] helpful=5 harmful=1 :: use type hints\n"
        "\n"
        "## USER PREFERENCES\n"
        "[pref-001] helpful=2 harmful=0 :: prefer pathlib\n"
        "\n"
        "## OTHERS\n"
        "[kpt_001] helpful=0 harmful=0 :: legacy point"
    )
    out = format_playbook(pb)
    assert block in out
    assert out in rendered_candidates(block)
    # empty sections are omitted entirely
    assert "## MISTAKES TO AVOID" not in out
    assert "## PROJECT CONTEXT" not in out


def test_SCN_SECT_003_02_format_empty_playbook_returns_empty_string():
    assert format_playbook(make_pb()) == ""


def test_SCN_SECT_003_03_format_output_overhead_within_20_percent():
    sections = {}
    lines = []
    for si, name in enumerate(CANON):
        slug = SECTION_SLUGS[name]
        entries = []
        for i in range(1, 5):
            e = kp(
                f"{slug}-{i:03d}",
                f"synthetic key point {si}.{i}: prefer explicit configuration over implicit defaults",
                i,
                i % 2,
            )
            entries.append(e)
            lines.append(entry_line(e))
        sections[name] = entries
    pb = make_pb(sections)
    assert sum(len(v) for v in pb["sections"].values()) == 20

    out = format_playbook(pb)
    template = load_template("playbook.txt")
    flat = template.replace("{key_points}", "\n".join(lines))
    for line in lines:
        assert line in out
    assert len(out) <= len(flat) * 1.20, (len(out), len(flat))


def test_REQ_SECT_003_canonical_order_independent_of_dict_order():
    # sections stored in reverse order: output still in SECTION_SLUGS order
    pb = {
        "version": "1.0",
        "last_updated": None,
        "sections": {
            OTH: [kp("oth-001", "o")],
            CTX: [kp("ctx-001", "c")],
            PREF: [kp("pref-001", "u")],
            MIS: [kp("mis-001", "m")],
            PAT: [kp("pat-001", "p")],
        },
    }
    out = format_playbook(pb)
    positions = [out.index(f"## {name}\n") for name in CANON]
    assert positions == sorted(positions)


# --------------------------------------------------------------------------- SCN-SECT-004 / REQ-SECT-005


def test_SCN_SECT_004_01_llm_returns_dict_with_valid_section():
    pb = make_pb()
    result = update_playbook_data(
        pb,
        {"new_key_points": [{"text": "avoid globals", "section": "MISTAKES TO AVOID"}], "evaluations": []},
    )
    assert result is pb  # no "operations" key: in place, same object (decision 7)
    expected = empty_sections()
    expected[MIS] = [kp("mis-001", "avoid globals", 0, 0)]
    assert result["sections"] == expected


def test_SCN_SECT_004_01_next_available_id():
    pb = make_pb({MIS: [kp("mis-001", "old", 1, 0), kp("mis-002", "older", 0, 0)]})
    result = update_playbook_data(
        pb,
        {"new_key_points": [{"text": "avoid globals", "section": "MISTAKES TO AVOID"}], "evaluations": []},
    )
    assert result["sections"][MIS][-1] == kp("mis-003", "avoid globals", 0, 0)


def test_SCN_SECT_004_02_llm_returns_dict_with_unknown_section(diag_mode):
    pb = make_pb()
    result = update_playbook_data(
        pb, {"new_key_points": [{"text": "some tip", "section": "RANDOM STUFF"}], "evaluations": []}
    )
    expected = empty_sections()
    expected[OTH] = [kp("oth-001", "some tip", 0, 0)]
    assert result["sections"] == expected
    assert diag_files(diag_mode, "sections_unknown_section"), "OBS-SECT-002 diagnostic not written"
    assert "RANDOM STUFF" in diag_text(diag_mode, "sections_unknown_section")


def test_SCN_SECT_004_03_llm_returns_plain_string_backward_compat():
    pb = make_pb()
    result = update_playbook_data(pb, {"new_key_points": ["use structured logging"], "evaluations": []})
    expected = empty_sections()
    expected[OTH] = [kp("oth-001", "use structured logging", 0, 0)]
    assert result["sections"] == expected


def test_SCN_SECT_004_04_llm_returns_dict_with_case_mismatch_or_whitespace(diag_mode):
    pb = make_pb()
    result = update_playbook_data(
        pb,
        {
            "new_key_points": [
                {"text": "use patterns", "section": "patterns & approaches"},
                {"text": "another pattern", "section": "  patterns & approaches  "},
            ],
            "evaluations": [],
        },
    )
    expected = empty_sections()
    expected[PAT] = [kp("pat-001", "use patterns", 0, 0), kp("pat-002", "another pattern", 0, 0)]
    assert result["sections"] == expected
    # a recognised section is not an "unknown section" event
    assert diag_files(diag_mode, "sections_unknown_section") == []


def test_SCN_SECT_004_05_dict_without_section_or_null_or_empty(diag_mode):
    pb = make_pb()
    result = update_playbook_data(
        pb,
        {
            "new_key_points": [
                {"text": "Some insight"},
                {"text": "Another", "section": None},
                {"text": "Third", "section": ""},
            ],
            "evaluations": [],
        },
    )
    expected = empty_sections()
    expected[OTH] = [
        kp("oth-001", "Some insight", 0, 0),
        kp("oth-002", "Another", 0, 0),
        kp("oth-003", "Third", 0, 0),
    ]
    assert result["sections"] == expected
    assert diag_files(diag_mode, "sections_unknown_section") == []


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("PATTERNS & APPROACHES", "PATTERNS & APPROACHES"),
        ("patterns & approaches", "PATTERNS & APPROACHES"),
        ("Patterns & Approaches", "PATTERNS & APPROACHES"),
        ("  patterns & approaches  ", "PATTERNS & APPROACHES"),
        ("MISTAKES TO AVOID", "MISTAKES TO AVOID"),
        ("user preferences", "USER PREFERENCES"),
        ("Project Context", "PROJECT CONTEXT"),
        ("OTHERS", "OTHERS"),
        ("others", "OTHERS"),
        ("RANDOM STUFF", "OTHERS"),
        ("PATTERNS", "OTHERS"),  # no substring matching
        ("PATTERNS AND APPROACHES", "OTHERS"),  # no fuzzy matching
        ("", "OTHERS"),
        ("   ", "OTHERS"),
        (None, "OTHERS"),
    ],
)
def test_REQ_SECT_005_resolve_section_table(raw, expected):
    assert resolve_section(raw) == expected


def test_REQ_SECT_005_whitespace_only_section_is_missing_not_unknown(diag_mode):
    pb = make_pb()
    result = update_playbook_data(pb, {"new_key_points": [{"text": "t", "section": "   "}], "evaluations": []})
    assert result["sections"][OTH] == [kp("oth-001", "t", 0, 0)]
    assert diag_files(diag_mode, "sections_unknown_section") == []


def test_REQ_SECT_005_duplicate_text_and_empty_text_skipped():
    pb = make_pb({OTH: [kp("kpt_001", "prefer pathlib", 2, 0)]})
    result = update_playbook_data(
        pb,
        {
            "new_key_points": [
                {"text": "prefer pathlib", "section": "PATTERNS & APPROACHES"},  # dup across sections
                "prefer pathlib",
                {"text": "", "section": "PATTERNS & APPROACHES"},
                "",
            ],
            "evaluations": [],
        },
    )
    expected = empty_sections()
    expected[OTH] = [kp("kpt_001", "prefer pathlib", 2, 0)]
    assert result["sections"] == expected


# --------------------------------------------------------------------------- SCN-SECT-006 (load / migration)


def test_SCN_SECT_006_01_migrate_flat_playbook_with_mixed_ids(diag_mode):
    write_legacy(
        diag_mode,
        {
            "version": "1.0",
            "last_updated": "2026-01-15T10:00:00",
            "key_points": [
                {"name": "kpt_001", "text": "use types", "helpful": 5, "harmful": 1},
                {"name": "kpt_002", "text": "prefer pathlib", "helpful": 0, "harmful": 0},
            ],
        },
    )
    assert load_playbook() == {
        "version": "1.0",
        "last_updated": "2026-01-15T10:00:00",
        "sections": {
            "PATTERNS & APPROACHES": [],
            "MISTAKES TO AVOID": [],
            "USER PREFERENCES": [],
            "PROJECT CONTEXT": [],
            "OTHERS": [
                {"name": "kpt_001", "text": "use types", "helpful": 5, "harmful": 1},
                {"name": "kpt_002", "text": "prefer pathlib", "helpful": 0, "harmful": 0},
            ],
        },
    }
    # OBS-SECT-001: the migration is recorded with the count of migrated entries
    assert diag_files(diag_mode, "sections_migration"), "OBS-SECT-001 diagnostic not written"
    assert re.search(r"\b2\b", diag_text(diag_mode, "sections_migration"))


def test_SCN_SECT_006_02_migrate_flat_playbook_with_legacy_score_field(project):
    write_legacy(
        project,
        {
            "version": "1.0",
            "key_points": [
                "bare string entry",
                {"name": "kpt_002", "text": "some tip", "score": -3},
            ],
        },
    )
    assert load_playbook() == {
        "version": "1.0",
        "last_updated": None,
        "sections": {
            "PATTERNS & APPROACHES": [],
            "MISTAKES TO AVOID": [],
            "USER PREFERENCES": [],
            "PROJECT CONTEXT": [],
            "OTHERS": [
                {"name": "kpt_001", "text": "bare string entry", "helpful": 0, "harmful": 0},
                {"name": "kpt_002", "text": "some tip", "helpful": 0, "harmful": 3},
            ],
        },
    }


def test_SCN_SECT_006_03_load_already_sections_based_playbook(diag_mode):
    data = {
        "version": "1.0",
        "last_updated": "2026-02-18T14:30:00.000000",
        "sections": {
            "PATTERNS & APPROACHES": [
                {"name": "pat-001", "text": "Always use type hints", "helpful": 5, "harmful": 1}
            ],
            "MISTAKES TO AVOID": [],
            "USER PREFERENCES": [
                {"name": "pref-001", "text": "Prefer pathlib over os.path", "helpful": 2, "harmful": 0}
            ],
            "PROJECT CONTEXT": [],
            "OTHERS": [
                {"name": "kpt_001", "text": "Legacy migrated point", "helpful": 0, "harmful": 0},
                {"name": "oth-001", "text": "New uncategorized point", "helpful": 1, "harmful": 0},
            ],
        },
    }
    write_legacy(diag_mode, data)
    assert load_playbook() == data
    assert diag_files(diag_mode, "sections_migration") == []


def test_SCN_SECT_006_04_dual_key_file_handling(diag_mode):
    write_legacy(
        diag_mode,
        {
            "version": "1.0",
            "last_updated": "2026-02-01T09:00:00",
            "sections": {
                "PATTERNS & APPROACHES": [{"name": "pat-001", "text": "from sections", "helpful": 1, "harmful": 0}],
                "MISTAKES TO AVOID": [],
                "USER PREFERENCES": [],
                "PROJECT CONTEXT": [],
                "OTHERS": [],
            },
            "key_points": [
                {"name": "kpt_001", "text": "from key_points", "helpful": 9, "harmful": 0},
                "bare ignored string",
            ],
        },
    )
    pb = load_playbook()
    assert "key_points" not in pb
    expected_sections = empty_sections()
    expected_sections[PAT] = [kp("pat-001", "from sections", 1, 0)]
    assert pb == {"version": "1.0", "last_updated": "2026-02-01T09:00:00", "sections": expected_sections}
    assert diag_files(diag_mode, "sections_dual_key_warning"), "dual-key warning diagnostic not written"


def test_REQ_SECT_006_contract_migration_example(project):
    # the data contract's flat-to-sections example (004, "Migration Contracts")
    write_legacy(
        project,
        {
            "version": "1.0",
            "last_updated": "2026-01-15T10:00:00",
            "key_points": [
                {"name": "kpt_001", "text": "use types", "helpful": 5, "harmful": 1},
                {"name": "kpt_002", "text": "prefer pathlib", "helpful": 0, "harmful": 0},
                "bare string entry",
                {"name": "kpt_004", "text": "avoid globals", "score": -3},
            ],
        },
    )
    expected = empty_sections()
    expected[OTH] = [
        kp("kpt_001", "use types", 5, 1),
        kp("kpt_002", "prefer pathlib", 0, 0),
        kp("kpt_003", "bare string entry", 0, 0),
        kp("kpt_004", "avoid globals", 0, 3),
    ]
    assert load_playbook() == {"version": "1.0", "last_updated": "2026-01-15T10:00:00", "sections": expected}


def test_DECISION_11_bare_string_names_never_collide(project):
    write_legacy(
        project,
        {
            "version": "1.0",
            "key_points": [
                "first bare",
                {"name": "kpt_001", "text": "named one"},
                "second bare",
                {"name": "kpt_003", "text": "named three", "helpful": 1, "harmful": 0},
            ],
        },
    )
    pb = load_playbook()
    others = pb["sections"][OTH]
    assert [e["text"] for e in others] == ["first bare", "named one", "second bare", "named three"]
    names = [e["name"] for e in others]
    assert len(set(names)) == 4, names
    assert names[1] == "kpt_001" and names[3] == "kpt_003"
    assert re.fullmatch(r"kpt_\d{3}", names[0]) and re.fullmatch(r"kpt_\d{3}", names[2])


def test_DECISION_9_missing_or_corrupt_file_gives_default_playbook(project):
    default = {"version": "1.0", "last_updated": None, "sections": empty_sections()}
    assert load_playbook() == default
    d = claude_dir(project)
    d.mkdir(parents=True, exist_ok=True)
    (d / "playbook.json").write_text("{not json at all", encoding="utf-8")
    assert load_playbook() == default


def test_REQ_SECT_006_file_with_neither_key_gives_default(project):
    write_legacy(project, {"version": "1.0", "last_updated": None})
    assert load_playbook() == {"version": "1.0", "last_updated": None, "sections": empty_sections()}


def test_REQ_SECT_006_missing_canonical_sections_are_added(project):
    write_legacy(
        project,
        {
            "version": "1.0",
            "last_updated": "2026-02-18T14:30:00",
            "sections": {"USER PREFERENCES": [kp("pref-001", "tabs", 1, 0)]},
        },
    )
    pb = load_playbook()
    expected = empty_sections()
    expected[PREF] = [kp("pref-001", "tabs", 1, 0)]
    assert pb == {"version": "1.0", "last_updated": "2026-02-18T14:30:00", "sections": expected}


# --------------------------------------------------------------------------- SCN-SECT-008


def test_SCN_SECT_008_01_evaluation_finds_key_point_across_sections():
    pb = make_pb({PAT: [kp("pat-001", "use types", 3, 1)], OTH: [kp("kpt_001", "legacy tip", 0, 0)]})
    result = update_playbook_data(
        pb,
        {
            "new_key_points": [],
            "evaluations": [{"name": "pat-001", "rating": "helpful"}, {"name": "kpt_001", "rating": "harmful"}],
        },
    )
    expected = empty_sections()
    expected[PAT] = [kp("pat-001", "use types", 4, 1)]
    expected[OTH] = [kp("kpt_001", "legacy tip", 0, 1)]
    assert result["sections"] == expected


def test_SCN_SECT_008_02_pruning_removes_entry_from_correct_section():
    pb = make_pb({MIS: [kp("mis-001", "bad advice", 1, 4)], OTH: [kp("kpt_001", "good tip", 5, 0)]})
    result = update_playbook_data(pb, {"new_key_points": [], "evaluations": []})
    expected = empty_sections()
    expected[OTH] = [kp("kpt_001", "good tip", 5, 0)]
    assert result["sections"] == expected


# --------------------------------------------------------------------------- SCN-SECT-009


def test_SCN_SECT_009_01_extract_flat_dict_from_sections():
    pb = make_pb({PAT: [kp("pat-001", "use types", 5, 1)], OTH: [kp("kpt_001", "legacy tip", 0, 0)]})
    flat = build_playbook_dict(pb)
    assert flat == {"pat-001": "use types", "kpt_001": "legacy tip"}
    for name in CANON:
        assert name not in flat


def test_REQ_SECT_009_empty_playbook_gives_empty_dict():
    assert build_playbook_dict(make_pb()) == {}


# --------------------------------------------------------------------------- REQ-SECT-001 (file schema)


def test_REQ_SECT_001_snapshot_file_schema(project):
    pb = make_pb({PAT: [kp("pat-001", "use types", 5, 1)], OTH: [kp("kpt_001", "legacy", 0, 2)]})
    save_playbook(pb)
    data = read_snapshot(project)
    assert set(data) == {"version", "last_updated", "sections", "log"}
    assert data["version"] == "1.0"
    assert isinstance(data["last_updated"], str)
    datetime.fromisoformat(data["last_updated"])
    assert isinstance(data["sections"], dict)
    assert set(data["sections"]) == set(CANON)
    for entries in data["sections"].values():
        assert isinstance(entries, list)
        for e in entries:
            assert set(e) == ENTRY_KEYS
            assert isinstance(e["name"], str) and isinstance(e["text"], str)
            assert type(e["helpful"]) is int and type(e["harmful"]) is int
    assert data["sections"][PAT] == [kp("pat-001", "use types", 5, 1)]
    assert data["sections"][OTH] == [kp("kpt_001", "legacy", 0, 2)]
    assert (claude_dir(project) / "playbook.events.jsonl").exists()


def test_REQ_SECT_001_save_then_load_returns_saved_content(project):
    pb = make_pb({MIS: [kp("mis-001", "no bare except", 2, 1)], CTX: [kp("ctx-001", "py311", 0, 0)]})
    save_playbook(pb)
    loaded = load_playbook()
    assert set(loaded) == {"version", "last_updated", "sections"}
    assert loaded["sections"] == pb["sections"]
    assert loaded["version"] == "1.0"
    assert isinstance(loaded["last_updated"], str)
    datetime.fromisoformat(loaded["last_updated"])


def test_DECISION_8_save_that_changes_nothing_appends_nothing(project):
    pb = make_pb({PAT: [kp("pat-001", "use types", 5, 1)]})
    save_playbook(pb)
    log = claude_dir(project) / "playbook.events.jsonl"
    snap = claude_dir(project) / "playbook.json"
    log_before, snap_before = log.read_bytes(), snap.read_bytes()
    save_playbook(load_playbook())
    assert log.read_bytes() == log_before
    assert snap.read_bytes() == snap_before


# --------------------------------------------------------------------------- INV-SECT


def test_INV_SECT_001_sections_key_always_present_after_write(project):
    with pytest.raises(AssertionError):
        save_playbook({"version": "1.0", "last_updated": None, "key_points": [kp("kpt_001", "x")]})
    with pytest.raises(AssertionError):
        save_playbook({"version": "1.0"})
    snap = claude_dir(project) / "playbook.json"
    if snap.exists():  # a rejected save must never leave a flat-format file
        data = read_snapshot(project)
        assert "sections" in data and "key_points" not in data
    save_playbook(make_pb({OTH: [kp("oth-001", "ok")]}))
    assert "sections" in read_snapshot(project)


def test_INV_SECT_002_section_names_from_canonical_set(project):
    # decision 10: names outside the five move to OTHERS, nothing dropped
    write_legacy(
        project,
        {
            "version": "1.0",
            "last_updated": "2026-01-01T00:00:00",
            "sections": {
                "PATTERNS & APPROACHES": [kp("pat-001", "p", 1, 0)],
                "RANDOM": [kp("rnd-001", "stray entry", 2, 1)],
            },
        },
    )
    pb = load_playbook()
    assert set(pb["sections"]) == set(CANON)
    assert pb["sections"][PAT] == [kp("pat-001", "p", 1, 0)]
    assert pb["sections"][OTH] == [kp("rnd-001", "stray entry", 2, 1)]

    # the update path never invents a section
    result = update_playbook_data(
        pb,
        {
            "new_key_points": [
                {"text": "a", "section": "NEW SECTION"},
                {"text": "b", "section": "mistakes to avoid"},
                {"text": "c", "section": 7},  # decision 6: non-string section counts as missing
            ],
            "evaluations": [],
        },
    )
    assert set(result["sections"]) == set(CANON)
    assert [e["text"] for e in result["sections"][OTH]] == ["stray entry", "a", "c"]
    assert result["sections"][MIS] == [kp("mis-001", "b", 0, 0)]

    save_playbook(result)
    on_disk = read_snapshot(project)
    assert set(on_disk["sections"]) <= set(CANON)
    assert set(load_playbook()["sections"]) == set(CANON)


def test_INV_SECT_003_counter_non_negativity(project):
    write_legacy(
        project,
        {
            "version": "1.0",
            "key_points": [
                {"name": "kpt_001", "text": "a", "score": -7},
                {"name": "kpt_002", "text": "b", "score": 4},
                {"name": "kpt_003", "text": "c", "score": 0},
                {"name": "kpt_004", "text": "d"},
                "e",
            ],
        },
    )
    pb = load_playbook()
    got = {e["name"]: (e["helpful"], e["harmful"]) for e in pb["sections"][OTH]}
    assert got["kpt_001"] == (0, 7)
    assert got["kpt_002"] == (4, 0)
    assert got["kpt_003"] == (0, 0)
    assert got["kpt_004"] == (0, 0)
    for entries in pb["sections"].values():
        for e in entries:
            assert e["helpful"] >= 0 and e["harmful"] >= 0
    pb = update_playbook_data(
        pb,
        {
            "new_key_points": [{"text": "fresh", "section": "PROJECT CONTEXT"}],
            "evaluations": [{"name": n, "rating": r} for n in got for r in ("neutral", "bogus", "helpful")],
        },
    )
    assert pb["sections"][CTX] == [kp("ctx-001", "fresh", 0, 0)]
    for entries in pb["sections"].values():
        for e in entries:
            assert e["helpful"] >= 0 and e["harmful"] >= 0


def test_INV_SECT_004_legacy_ids_preserved_during_migration(project):
    names = ["kpt_010", "kpt_002", "custom-name", "pat-001", "kpt_007"]
    write_legacy(
        project,
        {
            "version": "1.0",
            "key_points": [{"name": n, "text": f"text {i}", "helpful": i, "harmful": 0} for i, n in enumerate(names)],
        },
    )
    pb = load_playbook()
    assert [e["name"] for e in pb["sections"][OTH]] == names
    for name in CANON[:-1]:
        assert pb["sections"][name] == []


def test_INV_SECT_005_section_slug_id_prefix_consistency():
    pb = make_pb({OTH: [kp("kpt_001", "legacy one"), kp("kpt_005", "legacy five")]})
    result = update_playbook_data(
        pb,
        {"new_key_points": [{"text": f"new in {name}", "section": name} for name in CANON], "evaluations": []},
    )
    for name in CANON:
        slug = SECTION_SLUGS[name]
        new = [e for e in result["sections"][name] if e["text"].startswith("new in")]
        assert len(new) == 1
        assert new[0]["name"] == f"{slug}-001"
    assert [e["name"] for e in result["sections"][OTH]] == ["kpt_001", "kpt_005", "oth-001"]


def test_INV_SECT_006_migration_round_trip_stability(project):
    write_legacy(
        project,
        {
            "version": "1.0",
            "last_updated": "2026-01-15T10:00:00",
            "key_points": [
                {"name": "kpt_001", "text": "use types", "helpful": 5, "harmful": 1},
                "bare string entry",
                {"name": "kpt_003", "text": "scored", "score": 2},
                {"name": "kpt_004", "text": "both", "helpful": 1, "harmful": 1, "score": 9},
            ],
        },
    )
    first = load_playbook()
    sections_before = copy.deepcopy(first["sections"])
    version_before = first["version"]
    save_playbook(first)
    second = load_playbook()
    assert second["sections"] == sections_before
    assert second["version"] == version_before == "1.0"
    assert set(second) == {"version", "last_updated", "sections"}
    assert isinstance(second["last_updated"], str)
    datetime.fromisoformat(second["last_updated"])
    # a third round trip changes nothing either
    save_playbook(second)
    assert load_playbook()["sections"] == sections_before


def test_INV_SECT_007_no_key_points_key_in_output(project):
    write_legacy(project, {"version": "1.0", "key_points": ["a", {"name": "kpt_002", "text": "b"}]})
    pb = load_playbook()
    assert "key_points" not in pb
    pb["key_points"] = [kp("kpt_099", "stale flat entry")]
    save_playbook(pb)
    data = read_snapshot(project)
    assert "key_points" not in data
    loaded = load_playbook()
    assert "key_points" not in loaded
    assert all(e["name"] != "kpt_099" for entries in loaded["sections"].values() for e in entries)


# --------------------------------------------------------------------------- diagnostics plumbing


def test_diagnostic_mode_and_save_diagnostic(project):
    assert get_project_dir().resolve() == project.resolve()
    assert is_diagnostic_mode() is False
    d = claude_dir(project)
    d.mkdir(parents=True, exist_ok=True)
    (d / "diagnostic_mode").write_text("", encoding="utf-8")
    assert is_diagnostic_mode() is True
    path = save_diagnostic("hello diagnostic", "unit_probe")
    assert path.exists()
    assert path.parent.resolve() == (d / "diagnostic").resolve()
    assert path.name.endswith("_unit_probe.txt")
    assert "hello diagnostic" in path.read_text(encoding="utf-8")


def test_no_diagnostic_files_outside_diagnostic_mode(project):
    write_legacy(project, {"version": "1.0", "key_points": ["a"]})
    load_playbook()
    update_playbook_data(make_pb(), {"new_key_points": [{"text": "x", "section": "NOPE"}], "evaluations": []})
    assert not (claude_dir(project) / "diagnostic").exists() or not any(
        (claude_dir(project) / "diagnostic").iterdir()
    )


def test_INV_SECT_006_save_is_faithful_after_a_name_is_reused(project):
    # What save_playbook() is given is what load_playbook() returns, even when a generated name
    # (oth-001) is taken again after its first holder was pruned (REQ-SECT-002 scans current entries).
    from playbook import apply_structured_operations, prune_harmful

    pb = make_pb({OTH: [kp("oth-001", "initial 1", 0, 3)]})
    save_playbook(copy.deepcopy(pb))
    pb = prune_harmful(pb)
    assert pb["sections"] == empty_sections()
    save_playbook(copy.deepcopy(pb))
    assert load_playbook()["sections"] == empty_sections()
    pb = apply_structured_operations(pb, [{"type": "ADD", "text": "text a", "section": "OTHERS"}])
    assert pb["sections"][OTH] == [kp("oth-001", "text a", 0, 0)]
    save_playbook(copy.deepcopy(pb))
    assert load_playbook()["sections"] == pb["sections"]
