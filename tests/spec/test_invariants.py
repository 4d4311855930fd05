"""Property tests: random sequences of curator operations, evaluations and prunes.

After every step, whatever the step (valid or not):
  INV-SECT-002 / INV-CUR-004  only the five canonical section keys, all present
  INV-SECT-003 / INV-SCORE-001/002 / INV-CUR-003  counters are ints >= 0
  (data contract)             names unique across the whole playbook
  INV-SECT-007                no key_points key
  INV-SCORE-004               no score key; every entry has exactly name/text/helpful/harmful
  INV-CUR-005                 at most 10 operations applied per call
  INV-CUR-001 / INV-CUR-010   the operations path never mutates the caller's dict
  INV-CUR-002                 nothing raises
  INV-CUR-011 / INV-SCORE-003 pruning removes exactly the entries with harmful >= 3 and harmful > helpful
"""

import copy
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import json

from playbook import (
    SECTION_SLUGS,
    apply_structured_operations,
    load_playbook,
    prune_harmful,
    save_playbook,
    update_playbook_data,
)
from playbook.learner.replies import parse_curator_reply

from tests.spec.helpers import CANON, ENTRY_KEYS

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

OP_TYPES = {"ADD", "UPDATE", "MERGE", "DELETE"}


@pytest.fixture(scope="module", autouse=True)
def project_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("inv_project")
    mp = pytest.MonkeyPatch()
    mp.setenv("CLAUDE_PROJECT_DIR", str(path))
    yield path
    mp.undo()


# --------------------------------------------------------------------------- strategies

ID_POOL = [f"{slug}-{i:03d}" for slug in SECTION_SLUGS.values() for i in range(1, 7)] + [
    "kpt_001",
    "kpt_002",
    "nonexistent",
    "",
]
TEXT_POOL = [f"text {c}" for c in "abcdefghijkl"] + ["", "   "]
SECTION_POOL = CANON + [s.lower() for s in CANON] + ["  OTHERS  ", "RANDOM STUFF", "", None, 5]

ids = st.sampled_from(ID_POOL)
texts = st.sampled_from(TEXT_POOL)
sections = st.sampled_from(SECTION_POOL)
junk = st.sampled_from([None, 0, 1.5, True, "text x", [1, 2], {"k": "v"}])


def _opt(d, key, strat):
    """Sometimes drop or corrupt a field."""
    return st.one_of(st.just(d), strat.map(lambda v: {**d, key: v}), st.just({k: v for k, v in d.items() if k != key}))


add_op = st.builds(lambda t, s: {"type": "ADD", "text": t, "section": s}, texts, sections).flatmap(
    lambda d: st.one_of(st.just(d), _opt(d, "section", junk), _opt(d, "text", junk))
)
update_op = st.builds(lambda i, t: {"type": "UPDATE", "target_id": i, "text": t}, ids, texts).flatmap(
    lambda d: st.one_of(st.just(d), _opt(d, "target_id", junk), _opt(d, "text", junk))
)
merge_op = st.builds(
    lambda src, t, s: {"type": "MERGE", "source_ids": src, "merged_text": t, "section": s},
    st.lists(ids, min_size=0, max_size=4),
    texts,
    sections,
).flatmap(lambda d: st.one_of(st.just(d), _opt(d, "section", junk), _opt(d, "source_ids", junk)))
delete_op = st.builds(
    lambda i, r: {"type": "DELETE", "target_id": i, "reason": r}, ids, st.sampled_from(["obsolete", ""])
).flatmap(lambda d: st.one_of(st.just(d), _opt(d, "target_id", junk)))
invalid_op = st.one_of(
    junk,
    st.builds(lambda t, x: {"type": t, "text": x}, st.sampled_from(["add", "REPLACE", "", None, 3]), texts),
    st.builds(lambda i: {"target_id": i, "text": "no type"}, ids),
)
operation = st.one_of(add_op, add_op, update_op, merge_op, merge_op, delete_op, delete_op, invalid_op)
operations = st.lists(operation, min_size=0, max_size=14)

evaluation = st.builds(
    lambda n, r: {"name": n, "rating": r}, ids, st.sampled_from(["helpful", "harmful", "harmful", "neutral", "bogus"])
)
evaluations = st.lists(evaluation, max_size=8)

new_key_point = st.one_of(
    texts,
    st.builds(lambda t, s: {"text": t, "section": s}, texts, sections),
    st.builds(lambda t: {"text": t}, texts),
)
new_key_points = st.lists(new_key_point, max_size=5)

step = st.one_of(
    st.tuples(st.just("apply"), operations),
    st.tuples(st.just("update_ops"), operations, evaluations, new_key_points),
    st.tuples(st.just("update_nkp"), new_key_points, evaluations),
    st.tuples(st.just("prune")),
)


@st.composite
def initial_playbook(draw):
    secs = {name: [] for name in CANON}
    counter = 0
    for name in CANON:
        slug = SECTION_SLUGS[name]
        n = draw(st.integers(0, 3))
        for i in range(1, n + 1):
            counter += 1
            secs[name].append(
                {
                    "name": f"{slug}-{i:03d}",
                    "text": f"initial {counter}",
                    "helpful": draw(st.integers(0, 5)),
                    "harmful": draw(st.integers(0, 5)),
                }
            )
    if draw(st.booleans()):
        secs["OTHERS"].insert(0, {"name": "kpt_001", "text": "legacy one", "helpful": 0, "harmful": draw(st.integers(0, 4))})
    return {"version": "1.0", "last_updated": None, "sections": secs}


# --------------------------------------------------------------------------- checks


def check_invariants(pb):
    assert isinstance(pb, dict)
    assert "key_points" not in pb
    assert "score" not in pb
    assert set(pb["sections"]) == set(CANON), list(pb["sections"])
    names = []
    for section, entries in pb["sections"].items():
        assert isinstance(entries, list)
        for e in entries:
            assert isinstance(e, dict)
            assert set(e) == ENTRY_KEYS, e
            assert isinstance(e["name"], str) and e["name"], e
            assert isinstance(e["text"], str) and e["text"].strip(), e
            assert type(e["helpful"]) is int and e["helpful"] >= 0, e
            assert type(e["harmful"]) is int and e["harmful"] >= 0, e
            names.append(e["name"])
    assert len(names) == len(set(names)), f"duplicate names: {sorted(names)}"


def names_of(pb):
    return {e["name"] for entries in pb["sections"].values() for e in entries}


def creating_ops_in_first_10(ops):
    return sum(1 for op in ops[:10] if isinstance(op, dict) and op.get("type") in ("ADD", "MERGE"))


def meets_prune_rule(e):
    return e["harmful"] >= 3 and e["harmful"] > e["helpful"]


def no_prunable_left(pb):
    for entries in pb["sections"].values():
        for e in entries:
            assert not meets_prune_rule(e), e


def run_step(pb, st_):
    kind = st_[0]
    if kind == "apply":
        ops = st_[1]
        before = copy.deepcopy(pb)
        result = apply_structured_operations(pb, ops)
        assert pb == before, "apply_structured_operations mutated its input"
        if not ops:
            assert result is pb
        new_names = names_of(result) - names_of(before)
        assert len(new_names) <= creating_ops_in_first_10(ops)
        return result
    if kind == "update_ops":
        ops, evals, nkp = st_[1], st_[2], st_[3]
        before = copy.deepcopy(pb)
        result = update_playbook_data(pb, {"operations": ops, "evaluations": evals, "new_key_points": nkp})
        assert pb == before, "update_playbook_data mutated its input on the operations path"
        new_names = names_of(result) - names_of(before)
        assert len(new_names) <= creating_ops_in_first_10(ops)
        no_prunable_left(result)
        return result
    if kind == "update_nkp":
        nkp, evals = st_[1], st_[2]
        result = update_playbook_data(pb, {"new_key_points": nkp, "evaluations": evals})
        assert result is pb
        no_prunable_left(result)
        return result
    if kind == "prune":
        before = copy.deepcopy(pb)
        result = prune_harmful(pb)
        expected = {
            name: [e for e in entries if not meets_prune_rule(e)] for name, entries in before["sections"].items()
        }
        assert result["sections"] == expected
        return result
    raise AssertionError(kind)


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial_playbook(), st.lists(step, min_size=1, max_size=8))
def test_INV_random_operation_sequences_keep_invariants(pb, steps):
    check_invariants(pb)
    for s in steps:
        pb = run_step(pb, s)
        check_invariants(pb)


@settings(max_examples=100, deadline=None, database=None)
@given(initial_playbook(), operations)
def test_INV_CUR_005_at_most_10_operations_applied(pb, ops):
    """Only ops[:10] matter: appending more operations never changes the result."""
    padded = (list(ops) + [{"type": "NOOP"}] * 10)[:10]  # unknown type: skipped, but counts towards the 10
    extra = [{"type": "ADD", "text": f"extra {i}", "section": "OTHERS"} for i in range(3)]
    a = apply_structured_operations(copy.deepcopy(pb), padded + extra)
    b = apply_structured_operations(copy.deepcopy(pb), padded)
    assert a["sections"] == b["sections"]
    assert all(not e["text"].startswith("extra ") for entries in a["sections"].values() for e in entries)
    check_invariants(a)


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(CANON), st.integers(0, 8), st.integers(0, 8)),
        min_size=0,
        max_size=12,
    )
)
def test_INV_SCORE_003_and_INV_CUR_011_prune_rule(spec):
    secs = {name: [] for name in CANON}
    for i, (section, helpful, harmful) in enumerate(spec):
        secs[section].append({"name": f"kpt_{i + 1:03d}", "text": f"t{i}", "helpful": helpful, "harmful": harmful})
    pb = {"version": "1.0", "last_updated": None, "sections": secs}
    expected = {name: [e for e in entries if not meets_prune_rule(e)] for name, entries in secs.items()}
    assert prune_harmful(copy.deepcopy(pb))["sections"] == expected
    assert update_playbook_data(copy.deepcopy(pb), {"new_key_points": [], "evaluations": []})["sections"] == expected
    assert update_playbook_data(copy.deepcopy(pb), {"operations": [], "evaluations": []})["sections"] == expected


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial_playbook(), st.lists(step, min_size=1, max_size=5))
def test_INV_SECT_006_save_load_round_trip_after_random_steps(pb, steps):
    """What save_playbook() is given is what load_playbook() returns, after any sequence of changes."""
    with tempfile.TemporaryDirectory() as d:
        old = os.environ.get("CLAUDE_PROJECT_DIR")
        os.environ["CLAUDE_PROJECT_DIR"] = d
        try:
            save_playbook(copy.deepcopy(pb))
            assert load_playbook()["sections"] == pb["sections"]
            for s in steps:
                pb = run_step(pb, s)
                save_playbook(copy.deepcopy(pb))
                loaded = load_playbook()
                check_invariants(loaded)
                assert set(loaded) == {"version", "last_updated", "sections"}
                assert loaded["sections"] == pb["sections"]
                assert loaded["version"] == "1.0"
        finally:
            if old is None:
                os.environ.pop("CLAUDE_PROJECT_DIR", None)
            else:
                os.environ["CLAUDE_PROJECT_DIR"] = old


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=12))
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(max_size=8), children, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None, database=None)
@given(st.one_of(st.text(max_size=200), json_value.map(json.dumps)))
def test_INV_CUR_008_curator_reply_parsing_never_raises(text):
    """The parsing half of INV-CUR-008 (run_curator itself needs a model client: later issue)."""
    result = parse_curator_reply(text)
    assert isinstance(result, dict)
    assert set(result) >= {"reasoning", "operations"}


def plain_text(n):
    # no braces or backticks inside strings: the spec's strategies (fences, naive brace counting)
    # are not required to see through them
    return st.text(alphabet=st.characters(blacklist_characters="{}`", blacklist_categories=("Cs",)), max_size=n)


@settings(max_examples=100, deadline=None, database=None)
@given(
    plain_text(40),
    st.lists(st.dictionaries(st.sampled_from(["type", "text", "target_id"]), plain_text(10), max_size=3), max_size=4),
    st.sampled_from(["raw", "json_fence", "bare_fence", "prose"]),
)
def test_REQ_CUR_016_curator_reply_round_trip(reasoning, ops, wrapping):
    body = json.dumps({"reasoning": reasoning, "operations": ops})
    text = {
        "raw": body,
        "json_fence": "```json\n" + body + "\n```",
        "bare_fence": "```\n" + body + "\n```",
        "prose": "Here is my decision:\n\n" + body + "\n\nThat is all.",
    }[wrapping]
    assert parse_curator_reply(text) == {"reasoning": reasoning, "operations": ops}
