"""A merge that renames key points while the models answer: the replies name entries as the models saw them,
so a name that means another key point by the time they are applied makes the cycle ask again, never land on
the teammate's entry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import eventlog.storage
from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.commands.merging import merge_file
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, reply_text, request_texts

pytestmark = pytest.mark.slow  # a fake model on a socket and a real learning cycle

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
OURS, THEIRS = "run the tests before committing", "never deploy on a Friday"


def entries(project: Path) -> dict[str, tuple[str, int, int]]:
    state = PlaybookRepository(project / ".claude").current()[0]
    return {kp.name: (kp.text, kp.helpful, kp.harmful) for _, kp in state.entries()}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    return project


def test_a_merge_that_renames_ours_while_the_curator_answers_never_lands_the_reply_on_theirs(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The teammate's log: their pat-001, written before ours, so the merge keeps their name and renames ours.
    theirs = PlaybookRepository(tmp_path / "teammate" / ".claude")
    monkeypatch.setattr(eventlog.storage, "utc_now", lambda: "2026-01-01T00:00:00.000000+00:00")
    theirs.append([ApplyOperations([{"type": "ADD", "text": THEIRS, "section": "PATTERNS & APPROACHES"}])],
                  Cause(source="test"))
    monkeypatch.undo()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    ours = PlaybookRepository(project / ".claude")
    ours.append([ApplyOperations([{"type": "ADD", "text": OURS, "section": "PATTERNS & APPROACHES"}])],
                Cause(source="test"))
    assert entries(project) == {"pat-001": (OURS, 0, 0)}

    def respond(body: dict) -> object:
        text = request_texts(body)
        if "You are the reflector" in text:
            return reply_text(json.dumps({"analysis": "pat-001 was followed", "bullet_tags": [
                {"name": "pat-001", "tag": "helpful", "rationale": "the tests ran before the commit"}]}))
        if "You are the curator" in text:
            merge_file(PlaybookRepository(project / ".claude"), theirs.log_path)  # a pull lands meanwhile
            return reply_text(json.dumps({"reasoning": "sharpen it", "operations": [
                {"type": "UPDATE", "target_id": "pat-001", "text": "run the whole test suite before committing"}]}))
        return reply_text("Done.")

    transcript = transcripts_dir(project, tmp_path) / "session.jsonl"  # this project's own sessions
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes((FIXTURES / "tool_use_resumed.jsonl").read_bytes())
    with FakeAnthropic(respond) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        request_learning(project, "SessionEnd", str(transcript), "session-1", "other")
        outcomes = learn_pending(project)

    assert [o.status for o in outcomes] == ["failed"]
    assert "pat-001 means another key point now" in outcomes[0].detail
    after = entries(project)
    assert after["pat-001"] == (THEIRS, 0, 0)  # the teammate's entry: not rated, not re-worded
    assert (OURS, 0, 0) in after.values()  # ours, under its new name, as it was: the cycle is asked again
    assert PlaybookRepository(project / ".claude").current()[0].pending
