"""Learning cycles against a fake Anthropic API: one transaction per cycle, or a recorded failure."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause, KeyPointAdded, KeyPointEvaluated, LearningCompleted, LearningFailed
from eventlog.events import LearningSkipped
from playbook.learner.bootstrap import transcripts_dir
from playbook.commands.cli import main
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, reply_error, reply_text, request_texts

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
SECRET = "sk-test-planted-secret-4242"
REFLECTION = {"analysis": "The tests were run before committing, as pat-001 says.",
              "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": "It was followed and it worked"},
                              {"name": "nope-999", "tag": "harmful", "rationale": "not in the playbook"}]}
CURATION = {"reasoning": "The user prefers pathlib; worth remembering.",
            "operations": [{"type": "ADD", "text": "prefer pathlib", "section": "USER PREFERENCES"}]}


def models(reflector: Reply | None = None, curator: Reply | None = None):
    """A responder that plays reflector and curator by the prompt it is sent."""
    def respond(body: dict) -> Reply:
        text = request_texts(body)
        if "You are the reflector" in text:
            return reflector or reply_text(json.dumps(REFLECTION))
        if "You are the curator" in text:
            return curator or reply_text(json.dumps(CURATION))
        return reply_text("Done.")
    return respond


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # Claude Code's directory: the learner reads only transcripts inside it
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    repo = PlaybookRepository(project / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": "run the tests before committing",
                                   "section": "PATTERNS & APPROACHES"}])], Cause(source="test"))
    return project


@pytest.fixture
def transcript(tmp_path) -> Path:
    path = transcripts_dir(tmp_path / "project", tmp_path) / "session.jsonl"  # this project's sessions
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "tool_use_resumed.jsonl", path)
    return path


def use(api: FakeAnthropic, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


def transactions(project: Path) -> list:
    return list(PlaybookRepository(project / ".claude").store.read())


def texts(project: Path) -> dict[str, tuple[str, int, int]]:
    state = PlaybookRepository(project / ".claude").current()[0]
    return {kp.name: (kp.text, kp.helpful, kp.harmful) for _, kp in state.entries()}


def assert_no_secret(project: Path) -> None:
    for path in (project / ".claude").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_a_cycle_is_one_transaction_with_everything_the_models_said(project, transcript, monkeypatch):
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "session-1", "other")
        outcomes = learn_pending(project)
        reflector_prompt = request_texts(api.message_bodies()[0])
        curator_prompt = request_texts(api.message_bodies()[1])
    assert [o.status for o in outcomes] == ["completed"]
    last = transactions(project)[-1]
    assert last.commit.source == "hook:SessionEnd" and last.commit.session == "session-1"
    assert last.commit.analysis == REFLECTION["analysis"] and last.commit.reasoning == CURATION["reasoning"]
    assert last.commit.model
    evaluated = [e for e in last.events if isinstance(e, KeyPointEvaluated)]
    assert [(e.name, e.rating, e.rationale) for e in evaluated] == [("pat-001", "helpful", "It was followed and it worked")]
    assert any(isinstance(e, KeyPointAdded) and e.text == "prefer pathlib" for e in last.events)
    completed = [e for e in last.events if isinstance(e, LearningCompleted)]
    assert completed and completed[0].cited == ["pat-001", "mis-002", "pref-003"]
    assert texts(project) == {"pat-001": ("run the tests before committing", 1, 0), "pref-001": ("prefer pathlib", 0, 0)}
    # The reflector sees the transcript; the curator sees the counters after the tags, not the transcript.
    assert "echo hi" in reflector_prompt and "echo hi" not in curator_prompt
    assert "[pat-001] helpful=1 harmful=0" in curator_prompt
    assert_no_secret(project)


@pytest.mark.slow
def test_a_transcript_processed_twice_counts_its_turns_once(project, transcript, monkeypatch):
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        request_learning(project, "PreCompact", str(transcript), "s", "manual")
        learn_pending(project)
        request_learning(project, "SessionEnd", str(transcript), "s", "other")
        outcomes = learn_pending(project)
        assert len(api.message_requests()) == 2
    assert [(o.status, o.detail) for o in outcomes] == [("skipped", "nothing new in the transcript")]
    assert texts(project)["pat-001"][1] == 1


@pytest.mark.slow
def test_only_the_turns_added_since_the_last_cycle_are_learned(project, transcript, monkeypatch):
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        request_learning(project, "PreCompact", str(transcript), "s")
        learn_pending(project)
        with open(transcript, "a") as handle:
            handle.write(json.dumps({"type": "user", "message": {"role": "user", "content": "LATER TURN"}}) + "\n")
        request_learning(project, "SessionEnd", str(transcript), "s")
        learn_pending(project)
        second_reflector = request_texts(api.message_bodies()[2])
    assert "LATER TURN" in second_reflector and "echo hi" not in second_reflector
    assert texts(project)["pat-001"][1] == 2


@pytest.mark.slow
@pytest.mark.parametrize("case", ["500_always", "garbage", "slow", "curator_500"])
def test_a_failing_model_leaves_the_playbook_unchanged_and_records_the_failure(project, transcript, monkeypatch, case):
    monkeypatch.setenv("PLAYBOOK_LEARN_DEADLINE", "1.5")
    replies = {"500_always": (reply_error(500), None), "garbage": (reply_text("\x00 not json {{{"), None),
               "slow": (Reply(text=json.dumps(REFLECTION), delay=4), None), "curator_500": (None, reply_error(503))}
    before = texts(project)
    with FakeAnthropic(models(*replies[case])) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "s")
        outcomes = learn_pending(project)
    assert [o.status for o in outcomes] == ["failed"]
    assert texts(project) == before
    failed = [e for e in transactions(project)[-1].events if isinstance(e, LearningFailed)]
    assert failed and failed[0].error and failed[0].attempt == 1
    pending = PlaybookRepository(project / ".claude").current()[0].pending
    assert [p.attempts for p in pending.values()] == [1]  # kept for a retry
    assert_no_secret(project)


def test_429_then_success_lands(project, transcript, monkeypatch):
    calls = []

    def respond(body):
        calls.append(1)
        return reply_error(429, retry_after=0) if len(calls) == 1 else models()(body)

    with FakeAnthropic(respond) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "s")
        assert [o.status for o in learn_pending(project)] == ["completed"]
    assert texts(project)["pat-001"][1] == 1


def test_prose_around_json_is_understood(project, transcript, monkeypatch):
    prose = reply_text("Sure! Here is my analysis:\n```json\n" + json.dumps(REFLECTION) + "\n```\nBye.")
    with FakeAnthropic(models(reflector=prose)) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "s")
        assert [o.status for o in learn_pending(project)] == ["completed"]


def test_no_api_key_skips_and_says_so(project, transcript, monkeypatch):
    monkeypatch.setenv("PLAYBOOK_CLAUDE", "")  # and no Claude Code CLI either
    request_learning(project, "SessionEnd", str(transcript), "s")
    outcomes = learn_pending(project)
    assert outcomes[0].status == "skipped" and "no API key" in outcomes[0].detail
    skipped = [e for e in transactions(project)[-1].events if isinstance(e, LearningSkipped)]
    assert skipped and "no API key" in skipped[0].reason


def test_a_session_of_the_plugins_own_commands_costs_no_model_call_and_a_short_preference_is_learned(
        project, tmp_path, monkeypatch, capsys):
    sessions = transcripts_dir(tmp_path / "project", tmp_path)  # this project's own sessions
    sessions.mkdir(parents=True, exist_ok=True)
    commands, preference = sessions / "commands.jsonl", sessions / "preference.jsonl"
    shutil.copy(FIXTURES / "plugin_commands.jsonl", commands)  # /…:show, /…:why ctx-001, /…:remember "…"
    shutil.copy(FIXTURES / "preference.jsonl", preference)  # "From now on use pathlib instead of os.path"
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(commands), "s-1", "other")
        skipped = learn_pending(project)
        assert api.message_requests() == []
        request_learning(project, "SessionEnd", str(preference), "s-2", "other")
        learned = learn_pending(project)
        assert len(api.message_requests()) == 2
    assert [(o.status, o.detail) for o in skipped] == [("skipped", "only the playbook's own slash commands")]
    assert [o.status for o in learned] == ["completed"] and "pref-001" in texts(project)
    recorded = [e for t in transactions(project) for e in t.events if isinstance(e, LearningSkipped)]
    lines = len(commands.read_bytes().splitlines())
    assert [(e.reason, e.through_line) for e in recorded] == [("only the playbook's own slash commands", lines)]
    capsys.readouterr()
    assert main(["--project", str(project), "log", "--type", "learning-skipped"]) == 0
    assert f"skipped {recorded[0].request}: only the playbook's own slash commands" in capsys.readouterr().out


@pytest.mark.slow
def test_a_killed_learner_leaves_the_request_pending_and_learn_pending_finishes_it(project, transcript, monkeypatch):
    with FakeAnthropic(models(reflector=Reply(text=json.dumps(REFLECTION), delay=30))) as slow:
        env = {**os.environ, "ANTHROPIC_BASE_URL": slow.url, "ANTHROPIC_API_KEY": SECRET}
        request_learning(project, "SessionEnd", str(transcript), "s")
        learner = subprocess.Popen([sys.executable, "-m", "playbook", "learn", "--pending"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        slow.wait_for(1, timeout=20)
        learner.send_signal(signal.SIGKILL)
        learner.wait()
    assert len(PlaybookRepository(project / ".claude").current()[0].pending) == 1
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        result = subprocess.run([sys.executable, "-m", "playbook", "learn", "--pending"], capture_output=True,
                                text=True, env={**os.environ}, timeout=60)
    assert result.returncode == 0 and "completed" in result.stdout
    assert texts(project)["pat-001"][1] == 1


@pytest.mark.slow
def test_parallel_subagents_finishing_together_all_land(project, tmp_path, monkeypatch):
    # The hooks take transcripts only under Claude Code's configuration directory.
    config_dir = tmp_path / "claude-config"
    subagents = transcripts_dir(project, config_dir) / "session" / "subagents"
    subagents.mkdir(parents=True)
    paths = []
    for index in range(4):
        path = subagents / f"agent-{index}.jsonl"
        path.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": f"task {index}"}}) + "\n"
                        + json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
                            {"type": "text", "text": f"done {index} [pat-001]"}]}}) + "\n")
        paths.append(path)
    with FakeAnthropic(models()) as api:
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": SECRET,
               "CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CONFIG_DIR": str(config_dir)}
        hooks = [subprocess.Popen([sys.executable, "-m", "playbook", "hook", "SubagentStop"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in paths]
        for hook, path in zip(hooks, paths):
            hook.stdin.write(json.dumps({"hook_event_name": "SubagentStop", "session_id": "s",
                                         "agent_transcript_path": str(path)}).encode())
            hook.stdin.close()
        for hook in hooks:
            assert hook.wait(timeout=30) == 0 and hook.stderr.read() == b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = [e for t in transactions(project) for e in t.events if isinstance(e, LearningCompleted)]
            if len(done) == 4:
                break
            time.sleep(0.05)
    assert sorted(e.transcript for e in done) == sorted(map(str, paths))
    assert texts(project)["pat-001"][1] == 4
    assert_no_secret(project)


@pytest.mark.slow
def test_a_reply_with_a_lone_surrogate_lands_with_a_replacement_character(project, transcript, monkeypatch):
    # "\ud83d" alone is valid JSON and a valid Python string, but UTF-8 cannot hold it.
    curation = {"reasoning": "half an emoji \ud83d", "operations": [{"type": "ADD", "text": "emoji \ud83d cut"}]}
    reflection = {**REFLECTION, "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": "ok \udc00"}]}
    with FakeAnthropic(models(reply_text(json.dumps(reflection)), reply_text(json.dumps(curation)))) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "session-\ud800", "other")
        outcomes = learn_pending(project)
    assert [o.status for o in outcomes] == ["completed"]
    assert texts(project)["oth-001"] == ("emoji \ufffd cut", 0, 0)
    last = transactions(project)[-1]
    assert last.commit.reasoning == "half an emoji \ufffd" and last.commit.session == "session-\ufffd"


@pytest.mark.slow
def test_a_reply_that_cannot_be_applied_is_recorded_as_failed_and_waits_for_its_retry(project, transcript, monkeypatch):
    import playbook.learner.learn

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in deciding")

    monkeypatch.setattr(playbook.learner.learn, "decide_all", broken)
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "session-1", "other")
        outcomes = learn_pending(project)
    assert [o.status for o in outcomes] == ["failed"]
    failed = [e for e in transactions(project)[-1].events if isinstance(e, LearningFailed)]
    assert failed and "RuntimeError" in failed[0].error
    # still pending, but not taken first again by every later learner: it waits for its retry delay
    assert [p.attempts for p in PlaybookRepository(project / ".claude").current()[0].pending.values()] == [1]
    assert learn_pending(project) == []
