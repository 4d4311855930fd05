"""Review and the lean context: an accept passes the collapse guard and the near-duplicate absorption of a direct
cycle; with review on, a reply the guard would hold becomes proposals; SessionStart's one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from eventlog.decide import ImportLegacy, ProposeOperations
from eventlog.events import Cause, CurationHeld, KeyPointAbsorbed, KeyPointsMerged, ProposalAccepted
from eventlog.events import ProposalRecorded
from playbook.learner import review
from projections.quickroads import notice_path
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic
from tests.test_lean_learning import ROOT, cycle, events_of, models, project, seed  # noqa: F401 (fixture)
import pytest


def _content(repo: PlaybookRepository) -> dict[str, list[tuple[str, str, int, int]]]:
    return {section: [(kp.name, kp.text, kp.helpful, kp.harmful) for kp in entries.values()]
            for section, entries in repo.state().sections.items()}


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "review", *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=ROOT)


@pytest.mark.slow
def test_with_review_a_held_reply_becomes_proposals_and_taking_them_all_is_held_again(
        project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLAYBOOK_REVIEW", "1")
    repo = seed(project, 20)
    before = _content(repo)
    wipe = {"reasoning": "start over", "operations": [{"type": "DELETE", "target_id": f"pat-{i + 1:03d}"}
                                                      for i in range(10)]}
    with FakeAnthropic(models([wipe])) as api:
        outcomes = cycle(project, api, tmp_path, 1, monkeypatch)
    assert [o.status for o in outcomes] == ["completed"]
    assert _content(repo) == before and events_of(project, CurationHeld) == []
    proposed = events_of(project, ProposalRecorded)
    assert len(proposed) == 10
    assert all(p.held and "delete or merge away 10 of 20 key points" in p.held for p in proposed)
    assert "would be held (it would delete or merge away 10 of 20" in capsys.readouterr().out
    listed = _cli(project)
    assert listed.stdout.count("would have been held: it would delete or merge away 10 of 20") == 10

    taken = _cli(project, "--accept-all", "--json")
    decisions = json.loads(taken.stdout)["decisions"]
    assert taken.returncode == 0 and [d["outcome"] for d in decisions] == ["held"] * 10
    assert "delete or merge away 10 of 20" in decisions[0]["reason"]
    assert _content(repo) == before and len(repo.state().proposals) == 10
    held = events_of(project, CurationHeld)
    assert len(held) == 1 and (held[0].entries, held[0].removed) == (20, 10)

    one = review.accept(repo, proposed[0].proposal)  # one of them, chosen: a tidy-up the guard lets through
    assert one.outcome == "accepted" and repo.state().get("pat-001") is None and len(repo.state().where) == 19
    assert len(repo.state().proposals) == 9


@pytest.mark.slow
def test_a_single_accept_that_would_shrink_the_playbook_too_much_is_held_and_stays_pending(project):
    repo = PlaybookRepository(project / ".claude")
    long = "Keep the release checklist: " + "; ".join(f"step {i} verify the artefact signature" for i in range(30))
    repo.append([ImportLegacy(data={"version": "1.0", "sections": {"PATTERNS & APPROACHES": [
        {"name": "pat-001", "text": long, "helpful": 0, "harmful": 0},
        {"name": "pat-002", "text": "Run the tests first", "helpful": 0, "harmful": 0}]}},
        path="test", genesis=False)], Cause(source="test"))
    repo.append([ProposeOperations(operations=[{"type": "UPDATE", "target_id": "pat-001", "text": "Check it"}],
                                   prefix="c1")], Cause(source="test"))
    decision = review.accept(repo, "c1-1")
    assert decision.outcome == "held" and "shrink the playbook's text" in decision.reason
    assert repo.state().get("pat-001").text == long and list(repo.state().proposals) == ["c1-1"]
    refused = _cli(project, "--accept", "c1-1")
    assert refused.returncode == 1 and refused.stdout.startswith("held c1-1: it would shrink the playbook's text")
    edited = review.accept(repo, "c1-1", text=long[:len(long) * 3 // 4])  # edited to a smaller cut: applied
    assert edited.outcome == "accepted" and repo.state().get("pat-001").text == long[:len(long) * 3 // 4]


@pytest.mark.slow
def test_an_accepted_near_duplicate_is_absorbed_exactly_as_a_direct_cycle_absorbs_it(tmp_path, monkeypatch):
    add = {"reasoning": "new lessons", "operations": [
        {"type": "ADD", "section": "MISTAKES TO AVOID", "text": "Lesson 2: check the cache module number 2 before releasing"},
        {"type": "ADD", "section": "PATTERNS & APPROACHES", "text": "Prefer pathlib for file paths"}]}
    results = {}
    for mode in ("direct", "review"):
        for name in list(os.environ):
            if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_")):
                monkeypatch.delenv(name)
        monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # Claude Code's directory: the learner reads only transcripts inside it
        if mode == "review":
            monkeypatch.setenv("PLAYBOOK_REVIEW", "1")
        project = tmp_path / mode
        (project / ".claude").mkdir(parents=True)
        repo = seed(project, 4)
        with FakeAnthropic(models([add])) as api:
            cycle(project, api, tmp_path, 1, monkeypatch)
        if mode == "review":
            assert len(_content(repo)["PATTERNS & APPROACHES"]) == 4 and len(repo.state().proposals) == 2
            decisions = review.accept_all(repo)
            assert [d.outcome for d in decisions] == ["accepted", "accepted"] and decisions[0].tx == decisions[1].tx
            accepted = decisions[0].events
            assert [type(e) for e in accepted][:1] == [ProposalAccepted]
        absorbed = events_of(project, KeyPointAbsorbed)
        assert [e.name for e in absorbed] == ["pat-003"] and absorbed[0].similarity >= 0.68
        assert events_of(project, KeyPointsMerged) == []
        results[mode] = _content(repo)
    assert results["review"] == results["direct"]


@pytest.mark.slow
def test_session_start_says_in_one_line_that_proposals_wait_from_the_projected_bytes(project):
    repo = seed(project, 2)
    repo.append([ProposeOperations(operations=[{"type": "ADD", "text": "Prefer pathlib", "section": "OTHERS"},
                                               {"type": "DELETE", "target_id": "pat-001"}], prefix="c1")],
                Cause(source="test"))
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}

    def session_start() -> dict:
        # the installed hook: standard library only, copying the projection's bytes
        run = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / "inject.py")], input="{}",
                             capture_output=True, text=True, env=env, timeout=60)
        assert run.returncode == 0 and run.stderr == ""
        return json.loads(run.stdout) if run.stdout else {}

    output = session_start()
    assert output["systemMessage"] == "playbook: 2 learned proposals waiting for review (run `playbook review`)"
    assert "Prefer pathlib" not in output["hookSpecificOutput"]["additionalContext"]
    assert repo.injection_path.read_bytes().partition(b"\n")[2].decode().count("waiting for review") == 1
    review.reject(repo, "c1-2", "keep it")
    assert session_start()["systemMessage"].startswith("playbook: 1 learned proposal waiting")
    review.accept(repo, "c1-1")
    output = session_start()
    assert "systemMessage" not in output and "Prefer pathlib" in output["hookSpecificOutput"]["additionalContext"]
    repo.append([ProposeOperations(operations=[{"type": "DELETE", "target_id": "pat-002"}], prefix="c2")],
                Cause(source="test"))
    assert session_start()["systemMessage"].startswith("playbook: 1 learned proposal waiting")
    # the once-a-day notice of why learning cannot run comes first; the line about proposals stays after it
    notice = Path(notice_path(project))
    notice.parent.mkdir(parents=True, exist_ok=True)
    notice.write_text(json.dumps("playbook: learning cannot run: no key") + "\n")
    output = session_start()
    assert output["systemMessage"] == ("playbook: learning cannot run: no key\n"
                                       "playbook: 1 learned proposal waiting for review (run `playbook review`)")
    assert "Prefer pathlib" in output["hookSpecificOutput"]["additionalContext"]
    assert session_start()["systemMessage"].startswith("playbook: 1 learned proposal waiting")  # shown once a day
    disabled = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "disable"],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert disabled.returncode == 0, disabled.stderr
    output = session_start()  # a disabled project's sessions are given nothing, this line included
    assert "hookSpecificOutput" not in output and "waiting for review" not in output.get("systemMessage", "")


def test_a_secret_typed_into_an_edit_or_a_reason_is_redacted_before_it_is_recorded(project):
    repo = seed(project, 2)
    repo.append([ProposeOperations(operations=[{"type": "ADD", "text": "Deploy with the CI key", "section": "OTHERS"},
                                               {"type": "UPDATE", "target_id": "pat-001", "text": "Check it"}],
                                   prefix="c1")], Cause(source="test"))
    key = "AKIA" + "Z7QW4XJ2KD9LM3PN"
    review.accept(repo, "c1-1", text=f"Deploy with the CI key {key}")
    review.reject(repo, "c1-2", f"it leaked {key}")
    log = repo.log_path.read_text()
    assert key not in log and log.count("[REDACTED:aws-access-key]") == 3  # accepted edit, its key point, reason
    assert "Deploy with the CI key [REDACTED:aws-access-key]" in {kp.text for _s, kp in repo.state().entries()}
