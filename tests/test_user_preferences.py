"""USER PREFERENCES the curator adds in a project go to the user-level playbook, unless the project keeps them.

A learning cycle against the fake Messages API: the preference lands in the user-level log, with the
cycle's session and the project it was learned in; the project keeps the rest; learned again, it is
not added twice; with `playbook_preferences_per_project`, it stays in the project.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from eventlog.events import KeyPointAdded
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from playbook.wiring.project import user_repository
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, reply_text, request_texts
from tests.test_learning import FIXTURES, REFLECTION, use
from tests.test_user_level import project  # noqa: F401  (the fixture)
import pytest

CURATION = {"reasoning": "The user wants short answers; the project builds with make.",
            "operations": [{"type": "ADD", "text": "Answer in one short paragraph", "section": "USER PREFERENCES"},
                           {"type": "ADD", "text": "Build with make, never by hand", "section": "PROJECT CONTEXT"}]}


@pytest.mark.slow
def test_learned_user_preferences_go_to_the_user_level_playbook_unless_kept_per_project(project, monkeypatch):
    monkeypatch.delenv("PLAYBOOK_PREFERENCES_PER_PROJECT")

    def respond(body: dict):
        text = request_texts(body)
        return reply_text(json.dumps(REFLECTION if "You are the reflector" in text else CURATION))

    transcript = transcripts_dir(project, Path(os.environ["HOME"]) / ".claude") / "s.jsonl"
    transcript.write_bytes((FIXTURES / "tool_use_resumed.jsonl").read_bytes())
    with FakeAnthropic(respond) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "s-1")
        assert [o.status for o in learn_pending(project)] == ["completed"]
        user_log = list(user_repository().store.read())
        assert len(user_log) == 1 and user_log[0].commit.session == "s-1"
        assert user_log[0].commit.note == f"user preferences learned in {project}"
        assert [(e.section, e.text) for e in user_log[0].events if isinstance(e, KeyPointAdded)] == [
            ("USER PREFERENCES", "Answer in one short paragraph")]
        project_texts = [kp.text for _, kp in PlaybookRepository(project / ".claude").state().entries()]
        assert project_texts == ["Build with make, never by hand"]

        # The same preference learned again (another session, or this cycle run again) adds nothing twice.
        request_learning(project, "SessionEnd", str(transcript), "s-2")
        transcript.write_bytes(transcript.read_bytes() * 2)
        assert [o.status for o in learn_pending(project)] == ["completed"]
        assert [kp.text for _, kp in user_repository().state().entries()] == ["Answer in one short paragraph"]

        (project / ".claude" / "playbook.settings.json").write_text(
            json.dumps({"playbook_preferences_per_project": True}))
        request_learning(project, "SessionEnd", str(transcript), "s-3")
        transcript.write_bytes(transcript.read_bytes() + (FIXTURES / "tool_use_resumed.jsonl").read_bytes())
        before = user_repository().log_path.read_bytes()
        assert [o.status for o in learn_pending(project)] == ["completed"]
        assert user_repository().log_path.read_bytes() == before
        state = PlaybookRepository(project / ".claude").state()
        assert [kp.text for kp in state.sections["USER PREFERENCES"].values()] == ["Answer in one short paragraph"]
