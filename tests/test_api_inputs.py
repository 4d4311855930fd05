"""The facade with caller dicts whose sections share one list, or whose entries share one dict.

Writing the new state back into the caller's objects must not let one section (or entry)
overwrite another: the result holds exactly what the same call gives on a playbook whose
sections are separate lists of separate dicts.
"""

import copy

import pytest

import playbook as P
from playbook import SECTION_SLUGS, apply_structured_operations, load_playbook, prune_harmful, save_playbook
from playbook import update_playbook_data
from playbook.wiring.project import repository

PAT, MIS, PREF, CTX, OTH = SECTION_SLUGS


@pytest.fixture(autouse=True)
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def kp(name, text, helpful=0, harmful=0):
    return {"name": name, "text": text, "helpful": helpful, "harmful": harmful}


def shared_pb(entries, slugs=SECTION_SLUGS):
    """A playbook whose `slugs` sections are one list object holding `entries`; the others are empty."""
    shared = list(entries)
    sections = {slug: (shared if slug in slugs else []) for slug in SECTION_SLUGS}
    return {"version": "1.0", "last_updated": None, "sections": sections}


def separate(pb):
    """The same playbook with a list of its own per section and a dict of its own per entry."""
    out = {k: copy.deepcopy(v) for k, v in pb.items() if k != "sections"}
    out["sections"] = {slug: [dict(e) if isinstance(e, dict) else e for e in entries]
                       for slug, entries in pb["sections"].items()}
    return out


def assert_unaliased(result):
    """No two sections of `result` share a list, no two entries share a dict."""
    lists = [id(entries) for entries in result["sections"].values()]
    assert len(set(lists)) == len(lists)
    entries = [id(e) for section in result["sections"].values() for e in section]
    assert len(set(entries)) == len(entries)


def frozen(pb):
    """What `pb` holds, object sharing included (deepcopy keeps it), to check it was left alone."""
    return copy.deepcopy(pb)


SHARED_CASES = {
    "all five share an empty list": ([], SECTION_SLUGS),
    "two share an empty list": ([], (PAT, OTH)),
    "all five share a list with entries": ([kp("pat-001", "use pathlib", 1), kp("mis-001", "no bare except")],
                                           SECTION_SLUGS),
    "three share a list with entries": ([kp("ctx-001", "repo uses uv", 2, 1)], (MIS, CTX, OTH)),
}


@pytest.fixture(params=list(SHARED_CASES), ids=list(SHARED_CASES))
def shared(request):
    entries, slugs = SHARED_CASES[request.param]
    return shared_pb(copy.deepcopy(entries), slugs)


# --- update_playbook_data, in place (no operations) --------------------------------------------


def test_the_reported_case_keeps_the_new_entry():
    pb = {"version": "1.0", "last_updated": None, "sections": dict.fromkeys(P.SECTION_SLUGS, [])}
    r = P.update_playbook_data(pb, {"new_key_points": [{"text": "use pathlib", "section": "PATTERNS & APPROACHES"}]})
    assert r is pb
    assert r["sections"] == {PAT: [kp("pat-001", "use pathlib")], MIS: [], PREF: [], CTX: [], OTH: []}
    assert_unaliased(r)


@pytest.mark.parametrize("extraction", [
    {"new_key_points": [{"text": "use pathlib", "section": PAT}]},
    {"new_key_points": [{"text": "a", "section": MIS}, {"text": "b", "section": OTH}, "legacy bare string"]},
    {"new_key_points": [{"text": "c", "section": CTX}],
     "evaluations": [{"name": "pat-001", "rating": "helpful"}, {"name": "kpt_001", "rating": "harmful"}]},
    {"evaluations": [{"name": "ctx-001", "rating": "harmful"}, {"name": "kpt_002", "rating": "helpful"}]},
    {},
], ids=["one new", "several new", "new and ratings", "ratings only", "nothing"])
def test_update_playbook_data_in_place_matches_separate_lists(shared, extraction):
    expected = update_playbook_data(separate(shared), copy.deepcopy(extraction))
    result = update_playbook_data(shared, copy.deepcopy(extraction))
    assert result is shared
    assert result == expected
    assert_unaliased(result)


def test_update_playbook_data_prunes_from_shared_list():
    pb = shared_pb([kp("pat-001", "good", 2), kp("mis-001", "bad", 0, 3)])
    extraction = {"new_key_points": [{"text": "fresh", "section": PREF}],
                  "evaluations": [{"name": "pat-001", "rating": "harmful"}]}
    expected = update_playbook_data(separate(pb), copy.deepcopy(extraction))
    result = update_playbook_data(pb, copy.deepcopy(extraction))
    assert result == expected
    assert all(e["text"] != "bad" for section in result["sections"].values() for e in section)
    assert_unaliased(result)


def test_entries_shared_between_separate_lists():
    entry = kp("pat-001", "use pathlib", 1)
    pb = {"version": "1.0", "last_updated": None,
          "sections": {PAT: [entry], MIS: [entry], PREF: [], CTX: [entry], OTH: []}}
    extraction = {"new_key_points": [{"text": "x", "section": OTH}],
                  "evaluations": [{"name": "pat-001", "rating": "helpful"}]}
    expected = update_playbook_data(separate(pb), copy.deepcopy(extraction))
    result = update_playbook_data(pb, copy.deepcopy(extraction))
    assert result == expected
    assert result["sections"][PAT][0] is entry  # the first use of the entry dict is kept in place
    assert entry == kp("pat-001", "use pathlib", 2)
    assert_unaliased(result)


def test_one_list_shared_by_sections_and_its_own_entry_twice():
    entry = kp("pat-001", "use pathlib")
    pb = shared_pb([entry, entry], (PAT, MIS))
    expected = update_playbook_data(separate(pb), {"new_key_points": [{"text": "y", "section": MIS}]})
    result = update_playbook_data(pb, {"new_key_points": [{"text": "y", "section": MIS}]})
    assert result == expected
    assert_unaliased(result)


def test_unshared_lists_are_still_reused_in_place():
    pb = {"version": "1.0", "last_updated": None, "sections": {slug: [] for slug in SECTION_SLUGS}}
    lists = dict(pb["sections"])
    update_playbook_data(pb, {"new_key_points": [{"text": "z", "section": PAT}]})
    assert all(pb["sections"][slug] is lists[slug] for slug in SECTION_SLUGS)
    assert pb["sections"][PAT] == [kp("pat-001", "z")]


def test_the_first_section_keeps_the_shared_list():
    pb = shared_pb([], SECTION_SLUGS)
    shared_list = pb["sections"][PAT]
    update_playbook_data(pb, {"new_key_points": [{"text": "z", "section": OTH}]})
    assert pb["sections"][PAT] is shared_list
    assert shared_list == []
    assert pb["sections"][OTH] == [kp("oth-001", "z")]


# --- update_playbook_data with operations, apply_structured_operations: a new dict ---------------


OPERATIONS = [
    [{"type": "ADD", "text": "prefer composition", "section": PAT}],
    [{"type": "ADD", "text": "one", "section": MIS}, {"type": "ADD", "text": "two", "section": OTH}],
    [{"type": "UPDATE", "target_id": "kpt_001", "text": "rewritten"}, {"type": "DELETE", "target_id": "kpt_002"}],
    [{"type": "MERGE", "source_ids": ["kpt_001", "kpt_002"], "merged_text": "merged", "section": CTX}],
]


@pytest.mark.parametrize("operations", OPERATIONS, ids=["add", "two adds", "update delete", "merge"])
def test_update_playbook_data_operations_matches_separate_lists(shared, operations):
    before = frozen(shared)
    extraction = {"operations": copy.deepcopy(operations), "evaluations": [{"name": "kpt_001", "rating": "helpful"}]}
    expected = update_playbook_data(separate(shared), copy.deepcopy(extraction))
    result = update_playbook_data(shared, extraction)
    assert result == expected
    assert shared == before  # the caller's dict is never mutated on the operations path
    assert_unaliased(result)


@pytest.mark.parametrize("operations", OPERATIONS, ids=["add", "two adds", "update delete", "merge"])
def test_apply_structured_operations_matches_separate_lists(shared, operations):
    before = frozen(shared)
    expected = apply_structured_operations(separate(shared), copy.deepcopy(operations))
    result = apply_structured_operations(shared, copy.deepcopy(operations))
    assert result == expected
    assert result is not shared
    assert shared == before
    assert len({id(v) for v in shared["sections"].values()}) == len({id(v) for v in before["sections"].values()})
    assert_unaliased(result)


# --- prune_harmful -----------------------------------------------------------------------------


@pytest.mark.parametrize("entries, slugs", [
    ([kp("pat-001", "good", 2), kp("mis-001", "bad", 0, 3)], SECTION_SLUGS),
    ([kp("mis-001", "bad", 1, 4)], (PAT, MIS)),
    ([kp("mis-001", "bad", 0, 5), kp("ctx-001", "keep", 3, 3)], (CTX, PREF, OTH)),
], ids=["all five", "two, all pruned", "three"])
def test_prune_harmful_matches_separate_lists(entries, slugs):
    pb = shared_pb(copy.deepcopy(entries), slugs)
    expected = prune_harmful(separate(pb))
    result = prune_harmful(pb)
    assert result is pb
    assert result == expected
    assert all(e["text"] != "bad" for section in result["sections"].values() for e in section)
    assert_unaliased(result)


def test_prune_harmful_with_nothing_to_prune_leaves_the_dict_alone():
    pb = shared_pb([kp("pat-001", "good", 2)], (PAT, OTH))
    shared_list = pb["sections"][PAT]
    assert prune_harmful(pb) is pb
    assert pb["sections"][OTH] is shared_list  # nothing is written back when nothing is pruned


# --- save_playbook -----------------------------------------------------------------------------


def test_save_after_update_with_shared_lists_follows_the_log():
    pb = load_playbook()
    shared_list = []
    for slug in SECTION_SLUGS:
        pb["sections"][slug] = shared_list
    update_playbook_data(pb, {"new_key_points": [{"text": "use pathlib", "section": PAT},
                                                 {"text": "tabs", "section": PREF}]})
    save_playbook(pb)
    assert pb["sections"] == load_playbook()["sections"]
    assert pb["sections"][PAT] == [kp("pat-001", "use pathlib")]
    assert pb["sections"][PREF] == [kp("pref-001", "tabs")]
    assert_unaliased(pb)


def test_save_renames_a_shared_entry_once():
    pb = load_playbook()
    other = load_playbook()
    other["sections"][PAT] = [kp("pat-001", "theirs 1"), kp("pat-002", "theirs 2")]
    save_playbook(other)  # a concurrent writer takes pat-001 and pat-002
    a, b = kp("pat-001", "mine a"), kp("pat-003", "mine b")
    shared_list = [a, b]
    pb["sections"][PAT] = shared_list
    pb["sections"][OTH] = shared_list
    save_playbook(pb)
    names = {e["text"]: e["name"] for e in load_playbook()["sections"][PAT]}
    assert names == {"theirs 1": "pat-001", "theirs 2": "pat-002", "mine a": "pat-003", "mine b": "pat-004"}
    assert (a["name"], b["name"]) == ("pat-003", "pat-004")


def test_pending_commands_do_not_follow_later_edits_of_the_extraction():
    pb = load_playbook()
    extraction = {"new_key_points": [{"text": "use pathlib", "section": PAT}],
                  "evaluations": []}
    update_playbook_data(pb, extraction)
    extraction["new_key_points"].append({"text": "phantom", "section": MIS})
    extraction["new_key_points"][0]["text"] = "edited afterwards"
    extraction["evaluations"].append({"name": "pat-001", "rating": "harmful"})
    save_playbook(pb)
    assert pb["sections"][PAT] == [kp("pat-001", "use pathlib")]
    assert load_playbook()["sections"] == pb["sections"]
    log = repository().store.path.read_text(encoding="utf-8")
    assert "phantom" not in log and "edited afterwards" not in log


def test_a_prune_is_reported_once_through_update_and_save(capsys):
    pb = {"version": "1.0", "last_updated": None,
          "sections": {slug: [] for slug in SECTION_SLUGS} | {MIS: [kp("mis-001", "keep", 0, 2), kp("mis-002", "bad", 0, 3)]}}
    save_playbook(pb)
    loaded = load_playbook()
    capsys.readouterr()
    updated = update_playbook_data(loaded, {"evaluations": [{"name": "mis-001", "rating": "harmful"}]})
    save_playbook(updated)
    err = capsys.readouterr().err
    assert err.count("pruned mis-001") == 1 and err.count("pruned mis-002") == 1, err
    assert [e["name"] for e in load_playbook()["sections"][MIS]] == []
