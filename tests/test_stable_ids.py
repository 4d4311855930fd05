"""Stable ids: a lesson learned again keeps the id it was given, and `history` of any id ever issued says where
its lesson lives now."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from eventlog import similarity
from eventlog.commands import Absorb
from eventlog.decide import ApplyOperations, Evaluate, MergeDuplicates, Prune, SkipReason, decide
from eventlog.domain import KeyPoint, PlaybookState
from eventlog.events import Cause, KeyPointAbsorbed, KeyPointAdded, KeyPointEvaluated, KeyPointsMerged
from eventlog.events import OperationSkipped
from eventlog.evolve import fold
from playbook.learner.bootstrap import transcripts_dir
from playbook.commands.audit import revert
from playbook.commands.cli import main
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from playbook.rendering.report import fate_text
from projections.repository import PlaybookRepository
from projections.timeline import Fate, Timeline
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, request_texts

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
LESSON = "Run the tests before committing"
REWORDED = [
    LESSON, "Always run the tests before you commit", "Run the tests before every commit",
    "Before committing, run the tests", "Run the tests before you commit",
    "Make sure to run the tests before committing", "Run the test suite before committing",
    "Before each commit, run the tests", "Remember to run the tests before committing",
    "Run the tests before committing changes",
]
"""One lesson in ten wordings, each a near-duplicate of the first by either similarity measure."""
ABSORB = Absorb(threshold=similarity.THRESHOLDS[similarity.method()], method=similarity.method())


def state_of(*texts: str, helpful: int = 0) -> PlaybookState:
    state = PlaybookState()
    for number, text in enumerate(texts, 1):
        name = f"pat-{number:03d}"
        state.sections["PATTERNS & APPROACHES"][name] = KeyPoint(name, text, helpful, 0)
        state.where[name] = "PATTERNS & APPROACHES"
        state.high_water["pat"] = number
    return state


def add(text: str) -> dict[str, str]:
    return {"type": "ADD", "section": "PATTERNS & APPROACHES", "text": text}


# --- deciding an ADD of a near-duplicate ------------------------------------------------------------------


def test_a_near_duplicate_add_is_one_absorption_that_keeps_the_id_text_and_counters():
    state = state_of("Prefer small commits", LESSON, helpful=2)
    events = decide(state, ApplyOperations([add(REWORDED[1])], absorb=ABSORB))
    assert len(events) == 1 and isinstance(events[0], KeyPointAbsorbed)
    absorbed = events[0]
    assert (absorbed.name, absorbed.text, absorbed.absorbed) == ("pat-002", LESSON, REWORDED[1])
    assert absorbed.method == ABSORB.method and ABSORB.threshold <= absorbed.similarity <= 1
    after = fold(events, state)
    assert {kp.name: (kp.text, kp.helpful) for _s, kp in after.entries()} == {
        "pat-001": ("Prefer small commits", 2), "pat-002": (LESSON, 2)}


def test_the_specs_add_and_an_exact_duplicate_are_as_they_were():
    state = state_of(LESSON)
    added = decide(state, ApplyOperations([add(REWORDED[1])]))  # the spec's public functions absorb nothing
    assert [type(e) for e in added] == [KeyPointAdded] and added[0].name == "pat-002"
    same = decide(state, ApplyOperations([add(LESSON)], absorb=ABSORB))
    assert [(type(e), e.reason) for e in same if isinstance(e, OperationSkipped)] == [
        (OperationSkipped, SkipReason.DUPLICATE_TEXT)]


@pytest.mark.parametrize("aimed", [
    {"type": "UPDATE", "target_id": "pat-001", "text": "Run the linters before committing"},
    {"type": "DELETE", "target_id": "pat-001", "reason": "replaced"},
    {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": "Commit small, tested changes"},
])
def test_an_add_is_never_absorbed_into_an_entry_the_same_reply_changes(aimed):
    # Before or after the ADD in the reply: either way the curator meant that entry to change or go, and the
    # lesson it adds beside it must not go with it.
    state = state_of(LESSON, "Prefer small commits")
    for operations in ([add(REWORDED[1]), aimed], [aimed, add(REWORDED[1])]):
        events = decide(state, ApplyOperations(operations, absorb=ABSORB))
        assert not any(isinstance(e, KeyPointAbsorbed) for e in events)
        assert any(isinstance(e, KeyPointAdded) and e.text == REWORDED[1] for e in events)


def test_a_second_wording_in_one_reply_is_absorbed_into_the_first():
    events = decide(PlaybookState(), ApplyOperations([add(REWORDED[0]), add(REWORDED[1])], absorb=ABSORB))
    assert [type(e) for e in events] == [KeyPointAdded, KeyPointAbsorbed] and events[1].name == events[0].name


def test_an_absorption_names_the_key_point_and_holds_no_revert_of_it_up(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    created = repo.append([ApplyOperations([add(LESSON)])], Cause(source="hook:SessionEnd"))
    absorbed = repo.append([ApplyOperations([add(REWORDED[1])], absorb=ABSORB)], Cause(source="hook:SessionEnd"))
    assert created is not None and absorbed is not None
    assert [type(e) for e in absorbed.events] == [KeyPointAbsorbed]
    assert [item.event for item in Timeline(repo).history("pat-001")][-1] == absorbed.events[0]
    revert(repo, created.commit.tx)  # the text and counters it taught were not changed since
    assert repo.state().where == {}


# --- ten learning cycles re-adding the same lesson -------------------------------------------------------


def models(seen: list[list[str]]):
    """The reflector rates helpful every key point the playbook it is shown holds (and says which it saw);
    the curator adds the lesson again, in the next wording each time."""
    curated = iter(REWORDED)

    def respond(body: dict) -> Reply:
        text = request_texts(body)
        if "You are the reflector" in text:
            ids = sorted(set(re.findall(r"\[(pat-\d{3})\] helpful=", text)))  # the playbook shown, not the transcript
            seen.append(ids)
            tags = [{"name": name, "tag": "helpful", "rationale": "followed"} for name in ids]
            return reply_text(json.dumps({"analysis": "tests were run", "bullet_tags": tags}))
        if "You are the curator" in text:
            return reply_text(json.dumps({"reasoning": "worth keeping", "operations": [add(next(curated))]}))
        return reply_text("Done.")
    return respond


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # the learner reads only transcripts inside it
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    return project


def history_head(project: Path, name: str, capsys) -> str:
    capsys.readouterr()
    assert main(["--project", str(project), "history", name]) == 0
    return capsys.readouterr().out.splitlines()[0]


@pytest.mark.slow
def test_ten_cycles_relearning_one_lesson_keep_one_id_that_the_ratings_reach(project, tmp_path, monkeypatch,
                                                                            capsys):
    repo = PlaybookRepository(project / ".claude")
    seen: list[list[str]] = []
    with FakeAnthropic(models(seen)) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        for number in range(1, len(REWORDED) + 1):
            transcript = transcripts_dir(project, tmp_path) / f"session-{number}.jsonl"  # this project's sessions
            transcript.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(FIXTURES / "tool_use_resumed.jsonl", transcript)
            request_learning(project, "SessionEnd", str(transcript), f"session-{number}", "other")
            assert [o.status for o in learn_pending(project)] == ["completed"]
            assert list(repo.state().where) == ["pat-001"], number
        assert len(api.message_requests()) == 2 * len(REWORDED)
    events = [e for t in repo.store.read() for e in t.events]
    issued = {e.name for e in events if isinstance(e, (KeyPointAdded, KeyPointsMerged))}
    assert issued == {"pat-001"}
    absorbed = [e for e in events if isinstance(e, KeyPointAbsorbed)]
    assert [e.absorbed for e in absorbed] == REWORDED[1:] and {e.name for e in absorbed} == {"pat-001"}
    # Every session after the first was shown pat-001 and rated it, and every rating landed.
    assert seen == [[]] + [["pat-001"]] * (len(REWORDED) - 1)
    assert sum(isinstance(e, KeyPointEvaluated) for e in events) == len(REWORDED) - 1
    assert not any(isinstance(e, OperationSkipped) for e in events)
    kp = repo.state().get("pat-001")
    assert kp is not None and (kp.text, kp.helpful) == (LESSON, len(REWORDED) - 1)
    for name in issued:
        assert history_head(project, name, capsys) == f"history of {name}: in the playbook now"


# --- where a lesson merged away lives now ---------------------------------------------------------------


def test_history_follows_a_chain_of_merges_to_the_entry_that_holds_the_lesson_now(tmp_path):
    """Logs written before absorption merged each near-duplicate into a new id: oth-001 -> oth-003 -> oth-005."""
    repo = PlaybookRepository(tmp_path / ".claude")
    cause = Cause(source="hook:SessionEnd")
    repo.append([ApplyOperations([{"type": "ADD", "text": REWORDED[0]}, {"type": "ADD", "text": REWORDED[1]}])], cause)
    repo.append([MergeDuplicates(pairs=[("oth-001", "oth-002", 0.9)], method=ABSORB.method)], cause)
    repo.append([ApplyOperations([{"type": "ADD", "text": REWORDED[2]}])], cause)
    repo.append([MergeDuplicates(pairs=[("oth-003", "oth-004", 0.9)], method=ABSORB.method)], cause)
    timeline = Timeline(repo)

    def where(name: str) -> str:
        return fate_text(timeline.fate(name, timeline.history(name)))

    assert list(repo.state().where) == ["oth-005"]
    assert where("oth-001") == where("oth-002") == "lives on as oth-005 (merged into oth-003, then oth-005)"
    assert where("oth-003") == where("oth-004") == "lives on as oth-005 (merged into oth-005)"
    assert where("oth-005") == "in the playbook now"
    committed = repo.append([ApplyOperations([{"type": "DELETE", "target_id": "oth-005", "reason": "outdated"}])],
                            Cause(source="manual"))
    assert committed is not None
    removed = f"deleted (outdated) by manual in tx {committed.commit.tx}, "
    assert where("oth-001").startswith(f"merged into oth-003, then oth-005, then {removed}")
    assert where("oth-004").startswith(f"merged into oth-005, then {removed}")
    assert where("oth-005").startswith(removed)


def test_a_long_chain_of_merges_reads_as_where_it_went_first_and_last():
    fate = Fate(live="oth-011", merged_into=[f"oth-{n:03d}" for n in range(3, 12, 2)])
    assert fate_text(fate) == "lives on as oth-011 (merged into oth-003, then 3 more, then oth-011)"


def test_a_deleted_entry_a_revert_brings_back_lives_again_and_a_pruned_one_says_by_what(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": "a"}, {"type": "ADD", "text": "b"}])], Cause(source="test"))
    deleted = repo.append([ApplyOperations([{"type": "DELETE", "target_id": "oth-001"}])], Cause(source="manual"))
    assert deleted is not None
    timeline = Timeline(repo)
    assert fate_text(timeline.fate("oth-001", timeline.history("oth-001"))).startswith(
        f"deleted by manual in tx {deleted.commit.tx}, ")
    revert(repo, deleted.commit.tx)
    ratings = [{"name": "oth-002", "rating": "harmful"}] * 3
    pruned = repo.append([Evaluate(ratings), Prune()], Cause(source="hook:SessionEnd"))
    assert pruned is not None and list(repo.state().where) == ["oth-001"]
    timeline = Timeline(repo)
    assert fate_text(timeline.fate("oth-001", timeline.history("oth-001"))) == "in the playbook now"
    assert fate_text(timeline.fate("oth-002", timeline.history("oth-002"))).startswith(
        f"pruned (harmful >= 3 and harmful > helpful) by hook:SessionEnd in tx {pruned.commit.tx}, ")
