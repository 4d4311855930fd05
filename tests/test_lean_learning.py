"""The lean context in learning cycles: the collapse guard, merging what duplicates, staleness, citations."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ImportLegacy
from eventlog.events import Cause, CurationHeld, KeyPointAbsorbed, KeyPointDeleted, KeyPointMarkedStale
from eventlog.events import KeyPointsMerged
from eventlog.events import LearningCompleted
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, request_texts

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"


def models(curations: list[dict], ratings: list[list[dict]] | None = None):
    """Reflector and curator; the curator answers `curations` in turn (the last one again when they run out)."""
    calls = {"reflector": 0, "curator": 0}

    def respond(body: dict) -> Reply:
        text = request_texts(body)
        if "You are the reflector" in text:
            index = calls["reflector"]
            calls["reflector"] += 1
            tags = (ratings or [[]])[min(index, len(ratings or [[]]) - 1)]
            return reply_text(json.dumps({"analysis": "a session", "bullet_tags": tags}))
        if "You are the curator" in text:
            index = calls["curator"]
            calls["curator"] += 1
            return reply_text(json.dumps(curations[min(index, len(curations) - 1)]))
        return reply_text("Done.")
    return respond


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # Claude Code's directory: the learner reads only transcripts inside it
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    return project


def seed(project: Path, count: int) -> PlaybookRepository:
    data = {"version": "1.0", "sections": {"PATTERNS & APPROACHES": [
        {"name": f"pat-{i + 1:03d}", "text": f"Lesson {i}: check the {['parser', 'lock', 'cache', 'queue'][i % 4]} "
                                             f"module number {i} before release", "helpful": 0, "harmful": 0}
        for i in range(count)]}}
    repo = PlaybookRepository(project / ".claude")
    repo.append([ImportLegacy(data=data, path="test", genesis=False)], Cause(source="test"))
    return repo


def cycle(project: Path, api: FakeAnthropic, tmp_path: Path, number: int, monkeypatch) -> list:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    transcript = transcripts_dir(project, Path(os.environ["CLAUDE_CONFIG_DIR"])) / f"session-{number}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "tool_use_resumed.jsonl", transcript)
    request_learning(project, "SessionEnd", str(transcript), f"session-{number}", "other")
    return learn_pending(project)


def events_of(project: Path, kind: type) -> list:
    return [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events if isinstance(e, kind)]


def test_a_reply_deleting_most_of_the_playbook_is_held_and_changes_nothing(project, tmp_path, monkeypatch, capsys):
    repo = seed(project, 20)
    before = {kp.name: kp.text for _s, kp in repo.state().entries()}
    wipe = {"reasoning": "start over", "operations": [{"type": "DELETE", "target_id": f"pat-{i + 1:03d}"}
                                                      for i in range(10)]}
    with FakeAnthropic(models([wipe])) as api:
        outcomes = cycle(project, api, tmp_path, 1, monkeypatch)
    assert [o.status for o in outcomes] == ["completed"] and outcomes[0].detail.startswith("held: ")
    assert {kp.name: kp.text for _s, kp in repo.state().entries()} == before
    held = events_of(project, CurationHeld)
    assert len(held) == 1 and (held[0].entries, held[0].removed) == (20, 10) and len(held[0].operations) == 10
    assert "delete or merge away 10 of 20 key points (50%, more than 30%)" in held[0].reason
    line = capsys.readouterr().out
    assert "the curator's reply was held, not applied: it would delete or merge away 10 of 20" in line
    shown = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "log", "-n", "3"],
                           capture_output=True, text=True, cwd=ROOT)
    assert "held" in shown.stdout and "curator reply not applied" in shown.stdout


def test_a_reply_shrinking_the_text_too_much_is_held_and_a_small_tidy_up_is_not(project, tmp_path, monkeypatch):
    repo = seed(project, 20)
    shrink = {"reasoning": "shorter", "operations": [{"type": "UPDATE", "target_id": f"pat-{i + 1:03d}", "text": "x"}
                                                     for i in range(10)]}
    tidy = {"reasoning": "tidy", "operations": [{"type": "DELETE", "target_id": "pat-001"},
                                                {"type": "DELETE", "target_id": "pat-002"}]}
    with FakeAnthropic(models([shrink, tidy])) as api:
        cycle(project, api, tmp_path, 1, monkeypatch)
        assert "shrink the playbook's text" in events_of(project, CurationHeld)[0].reason
        cycle(project, api, tmp_path, 2, monkeypatch)
    assert len(events_of(project, CurationHeld)) == 1
    assert len(repo.state().where) == 18


def test_an_added_near_duplicate_is_absorbed_into_the_existing_key_point(project, tmp_path, monkeypatch):
    repo = seed(project, 4)
    add = {"reasoning": "new lessons", "operations": [
        {"type": "ADD", "section": "MISTAKES TO AVOID", "text": "Lesson 2: check the cache module number 2 before releasing"},
        {"type": "ADD", "section": "PATTERNS & APPROACHES", "text": "Prefer pathlib for file paths"}]}
    with FakeAnthropic(models([add])) as api:
        cycle(project, api, tmp_path, 1, monkeypatch)
    assert events_of(project, KeyPointsMerged) == []
    absorbed = events_of(project, KeyPointAbsorbed)
    assert [(e.name, e.absorbed) for e in absorbed] == [
        ("pat-003", "Lesson 2: check the cache module number 2 before releasing")]
    assert absorbed[0].method and absorbed[0].similarity >= 0.68
    assert repo.state().get("pat-003").text == "Lesson 2: check the cache module number 2 before release"
    texts = sorted(kp.text for _s, kp in repo.state().entries())
    assert "Prefer pathlib for file paths" in texts and len(texts) == 5


def test_unused_key_points_go_stale_then_retire_and_the_retirement_reverts(project, tmp_path, monkeypatch):
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps(
        {"playbook_stale_after_sessions": 2, "playbook_retire_after_sessions": 4}))
    repo = seed(project, 3)
    rate_first = [[{"name": "pat-001", "tag": "helpful", "rationale": "used"}]]
    nothing = {"reasoning": "nothing", "operations": []}
    with FakeAnthropic(models([nothing], rate_first)) as api:
        for number in range(1, 3):
            cycle(project, api, tmp_path, number, monkeypatch)
        stale = {e.name for e in events_of(project, KeyPointMarkedStale)}
        assert stale == {"pat-002", "pat-003"}
        state = repo.state()
        # the fixture transcript cites pat-001 and mis-002 and pref-003: pat-001 is the one used here
        assert state.usage["pat-002"].stale and not state.usage["pat-001"].stale
        injected = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "show", "--injected",
                                   "--json"], capture_output=True, text=True, cwd=ROOT)
        assert json.loads(injected.stdout)["included"] == ["pat-001", "pat-002", "pat-003"]
        for number in range(3, 5):
            cycle(project, api, tmp_path, number, monkeypatch)
    retired = events_of(project, KeyPointDeleted)
    assert sorted(e.name for e in retired) == ["pat-002", "pat-003"] and {e.reason for e in retired} == {"stale"}
    assert list(repo.state().where) == ["pat-001"]
    sweep = [t for t in repo.store.read() if any(isinstance(e, KeyPointDeleted) for e in t.events)][-1]
    assert sweep.commit.source == "stale"
    done = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "revert", sweep.commit.tx],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert sorted(repo.state().where) == ["pat-001", "pat-002", "pat-003"]


def test_citations_and_injections_are_recorded_per_session(project, tmp_path, monkeypatch):
    seed(project, 2)
    with FakeAnthropic(models([{"reasoning": "", "operations": []}])) as api:
        cycle(project, api, tmp_path, 1, monkeypatch)
        cycle(project, api, tmp_path, 2, monkeypatch)
    completed = events_of(project, LearningCompleted)
    assert [e.injected for e in completed] == [["pat-001", "pat-002"]] * 2
    assert all("pat-001" in e.cited for e in completed)
    state = PlaybookRepository(project / ".claude").state()
    assert state.sessions == 2
    assert (state.usage["pat-001"].injected, state.usage["pat-001"].cited) == (2, 2)
    assert (state.usage["pat-002"].injected, state.usage["pat-002"].cited) == (2, 0)


def playbook(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


def test_stats_shows_each_key_points_use_and_show_unused_lists_the_never_cited(project, tmp_path, monkeypatch):
    seed(project, 2)
    rate = [[{"name": "pat-002", "tag": "harmful", "rationale": "misled"}]]
    with FakeAnthropic(models([{"reasoning": "", "operations": []}], rate)) as api:
        cycle(project, api, tmp_path, 1, monkeypatch)
    document = json.loads(playbook(project, "stats", "--json").stdout)
    rows = {row["name"]: row for row in document["usage"]}
    assert document["sessions"] == 1
    assert {k: rows["pat-001"][k] for k in ("injected", "cited", "helpful", "harmful")} == \
        {"injected": 1, "cited": 1, "helpful": 0, "harmful": 0}
    assert {k: rows["pat-002"][k] for k in ("injected", "cited", "helpful", "harmful")} == \
        {"injected": 1, "cited": 0, "helpful": 0, "harmful": 1}
    human = playbook(project, "stats").stdout
    assert "use per key point (1 learned sessions; 0 stale, 1 never cited)" in human
    assert any(line.split()[:5] == ["pat-002", "1", "0", "0", "1"] for line in human.splitlines())
    unused = json.loads(playbook(project, "show", "--unused", "--json").stdout)
    assert [e["name"] for entries in unused["sections"].values() for e in entries] == ["pat-002"]


def test_dedup_is_a_dry_run_unless_apply_and_records_similarity_and_method(project):
    repo = PlaybookRepository(project / ".claude")
    data = {"version": "1.0", "sections": {
        "PATTERNS & APPROACHES": [{"name": "pat-001", "text": "Run the tests before committing", "helpful": 2, "harmful": 0},
                                  {"name": "pat-002", "text": "Use pathlib for file paths", "helpful": 0, "harmful": 0}],
        "MISTAKES TO AVOID": [{"name": "mis-001", "text": "Always run the tests before you commit", "helpful": 5, "harmful": 0},
                              {"name": "mis-002", "text": "Run the linter before committing", "helpful": 0, "harmful": 0}]}}
    repo.append([ImportLegacy(data=data, path="test", genesis=False)], Cause(source="test"))
    dry = playbook(project, "dedup")
    assert dry.returncode == 0 and "mis-001 ~ pat-001" in dry.stdout and "--apply" in dry.stdout
    assert len(repo.state().where) == 4
    applied = json.loads(playbook(project, "dedup", "--apply", "--json").stdout)
    assert applied["applied"] and [(p["kept"], p["merged"]) for p in applied["pairs"]] == [("mis-001", "pat-001")]
    merged = events_of(project, KeyPointsMerged)
    assert len(merged) == 1 and merged[0].method == applied["method"] and merged[0].similarity >= applied["threshold"]
    assert merged[0].text == "Always run the tests before you commit" and merged[0].helpful == 7
    assert sorted(kp.text for _s, kp in repo.state().entries()) == [
        "Always run the tests before you commit", "Run the linter before committing", "Use pathlib for file paths"]
    assert "nothing" not in playbook(project, "dedup").stdout and "0 pair(s)" in playbook(project, "dedup").stdout
    bad = playbook(project, "dedup", "--threshold", "7")
    assert bad.returncode == 2 and bad.stderr.startswith("playbook: ") and "Traceback" not in bad.stderr
