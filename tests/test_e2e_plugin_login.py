"""Adopted on a subscription: the plugin installed Claude Code's way, in a scratch HOME whose Claude
Code is logged in (stored OAuth credentials) and has no API key, against the fake Messages API.

Sessions learn through the Claude Code CLI itself (`claude -p`, no tools) and never from the
learner's own child sessions; `playbook stats` names that backend; `playbook disable` / `enable`
are recorded and SessionStart says once that learning is off; a cycle whose model call fails stays
pending and `playbook learn --retry` finishes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from eventlog.events import LearningFailed, LearningRequested, PlaybookDisabled, PlaybookEnabled
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, reply_error, request_texts
from tests.test_e2e_claude_code import CLAUDE, CURATION, respond, snapshot_of_log, wait_for_learning
from tests.test_e2e_plugin import PLUGIN, UV, network_env, tool_path, transcript_records, wait_for_ready
from tests.test_hooks_isolation import tracked_copy
from tests.test_learning_cli import store_login

pytestmark = [pytest.mark.slow, pytest.mark.skipif((CLAUDE is None or UV is None) and os.environ.get("CI") != "true",
                                reason="needs Claude Code (npm install @anthropic-ai/claude-code) and uv")]

LEARNER_PROMPTS = ("You are the reflector", "You are the curator")


def events(repo: PlaybookRepository, kind: type) -> list:
    return [e for t in repo.store.read() for e in t.events if isinstance(e, kind)]


def test_the_plugin_on_a_login_without_a_key_learns_through_the_cli(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    config = home / ".claude"
    (project / ".claude").mkdir(parents=True)
    store_login(config)
    repository = tracked_copy(tmp_path / "repository")
    env = network_env() | {"PATH": tool_path(tmp_path), "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config),
                           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                           "LANG": "C.UTF-8", "UV_PYTHON_DOWNLOADS": "never",
                           "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or str(Path.home() / ".cache" / "uv")}
    failing = {"curator": False}

    def model(body: dict) -> Reply:
        if failing["curator"] and "You are the curator" in request_texts(body):
            return reply_error(500, message="the fake model is down")
        return respond(body)

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        result = subprocess.run(list(args), cwd=project, env=env | extra, capture_output=True, text=True,
                                timeout=240)
        assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, \
            result.stdout + result.stderr
        return result

    run("claude", "plugin", "marketplace", "add", str(repository))
    run("claude", "plugin", "install", PLUGIN)
    (project / ".claude" / "playbook.json").write_text(json.dumps(
        {"version": "1.0", "key_points": [{"name": "kpt_001", "text": "run the tests before committing", "score": 0}]}))
    repo = PlaybookRepository(project / ".claude")

    with FakeAnthropic(model) as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        run("claude", "-p", "Where is the API?", "--output-format", "json")  # starts the plugin's set-up
        venv = wait_for_ready(config / "plugins" / "data")

        def playbook(*args: str) -> str:
            return run(str(venv / "bin" / "python"), "-I", "-m", "playbook", "--project", str(project), *args).stdout

        run("claude", "-p", "Please fix the failing test.", "--output-format", "json")
        learned = wait_for_learning(repo, 1, timeout=180)
        # A session the learner's own calls (wrongly) started would have ended, its hooks with it, before the
        # learner went on to record the cycle: what it left is in the log and on disk by now.
        asked = [b for b in api.message_bodies() if any(p in request_texts(b) for p in LEARNER_PROMPTS)]
        requests = [r for r in api.message_requests() if any(p in request_texts(r.body) for p in LEARNER_PROMPTS)]

        # Learned on the login, through `claude -p` with no tools: the fake curator's ADD, a preference of the
        # user's, is in the user-level playbook under CLAUDE_CONFIG_DIR.
        snapshot = snapshot_of_log(config / "playbook")
        added = CURATION["operations"][0]["text"]
        assert [e["text"] for e in snapshot["sections"]["USER PREFERENCES"]] == [added]
        # Two questions (the reflector's, the curator's); Claude Code may send one again when the fake answers
        # slowly on a loaded machine, which is the same question.
        assert len(learned) == 1 and len({request_texts(b) for b in asked}) == 2
        assert all(not b.get("tools") for b in asked)
        assert {r.headers.get("authorization") for r in requests} == {"Bearer oauth-test-login"}
        assert not any("x-api-key" in r.headers for r in requests)
        # No recursion: one request (the second session's end; the first ended before the set-up was
        # ready), and the only transcripts are the user's two sessions.
        assert [e.hook for e in events(repo, LearningRequested)] == ["SessionEnd"]
        assert len(list((config / "projects").rglob("*.jsonl"))) == 2
        assert "backend Claude Code CLI on your own login" in playbook("stats")

        # disable: recorded, nothing injected or learned, and SessionStart says so once.
        playbook("disable", "--reason", "trying without")
        run("claude", "-p", "Anything?", "--output-format", "json")
        run("claude", "-p", "Anything else?", "--output-format", "json")
        assert [e.hook for e in events(repo, LearningRequested)] == ["SessionEnd"]
        notice = "the playbook is disabled in this project"
        said = [r["attachment"]["content"] for r in transcript_records(config)
                if r.get("attachment", {}).get("type") == "hook_system_message" and notice in json.dumps(r)]
        assert len(said) == 1, said  # shown to the user once in the two sessions...
        assert not any(notice in request_texts(b) for b in api.message_bodies())  # ...and never to the model
        playbook("enable")
        assert [type(e) for e in events(repo, (PlaybookDisabled, PlaybookEnabled))] == [PlaybookDisabled,
                                                                                        PlaybookEnabled]

        # A cycle whose model call fails stays pending; `learn --retry` finishes it once the model is back.
        failing["curator"] = True
        # (Claude Code's own retries of the failed call off, so the failure is recorded at once)
        run("claude", "-p", "One more thing.", "--output-format", "json", CLAUDE_CODE_MAX_RETRIES="0")
        deadline = time.monotonic() + 180
        while not events(repo, LearningFailed) and time.monotonic() < deadline:
            time.sleep(0.05)
        failed = events(repo, LearningFailed)
        assert len(failed) == 1 and failed[0].attempt == 1 and "500" in failed[0].error, failed
        assert "failed 1 time(s), tried again at " in playbook("learn")
        failing["curator"] = False
        assert ": completed" in playbook("learn", "--retry")
        assert len(wait_for_learning(repo, 2)) == 2 and repo.current()[0].pending == {}
