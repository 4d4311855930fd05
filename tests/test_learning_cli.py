"""Learning on the user's own login: with no API key, the reflector and curator run through the real
Claude Code CLI (`claude -p`, no tools, JSON output) against the fake Messages API, and the child
sessions neither fire this project's hooks nor leave transcripts to learn from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.events import KeyPointAdded, LearningCompleted, LearningRequested
from playbook.learner.backend import DEFAULT_MODEL, describe, model_config
from playbook.learner.claude_cli import command
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, request_texts
from tests.test_e2e_claude_code import CLAUDE, CURATION, REFLECTION, respond

pytestmark = [pytest.mark.slow, pytest.mark.skipif(CLAUDE is None and os.environ.get("CI") != "true",
                                reason="Claude Code is not installed (npm install @anthropic-ai/claude-code)")]


def store_login(config: Path) -> None:
    """Claude Code logged in to a subscription: its stored OAuth credentials in its configuration directory."""
    config.mkdir(parents=True, exist_ok=True)
    (config / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {
        "accessToken": "oauth-test-login", "refreshToken": "oauth-test-refresh",
        "expiresAt": int(time.time() * 1000) + 86_400_000, "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "pro"}}))


def login_env(home: Path, api: FakeAnthropic) -> dict[str, str]:
    """A subscription user's environment: Claude Code logged in (its stored OAuth credentials), no API key."""
    store_login(home / ".claude")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_"))}
    env["PATH"] = f"{Path(str(CLAUDE)).parent}{os.pathsep}{env.get('PATH', '')}"
    return env | {"HOME": str(home), "ANTHROPIC_BASE_URL": api.url,
                  "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def test_the_backend_is_the_key_if_there_is_one_else_the_cli(tmp_path):
    claude = str(CLAUDE)
    assert model_config({"ANTHROPIC_API_KEY": "k", "PLAYBOOK_CLAUDE": claude}).backend == "api"
    config = model_config({"PLAYBOOK_CLAUDE": claude})
    assert config is not None and config.backend == "cli" and config.claude == claude
    assert describe(config).startswith(f"Claude Code CLI on your own login ({claude})")
    assert model_config({"PLAYBOOK_CLAUDE": "", "PATH": str(tmp_path), "HOME": str(tmp_path)}) is None
    found = model_config({"PATH": str(Path(claude).parent), "HOME": str(tmp_path)})
    assert found is not None and found.backend == "cli"
    # the flags the child runs with exist in the pinned CLI
    help_text = subprocess.run([claude, "--help"], capture_output=True, text=True, timeout=60).stdout
    for flag in ("--output-format", "--tools", "--safe-mode", "--no-session-persistence", "--strict-mcp-config",
                 "--disable-slash-commands", "--system-prompt"):
        assert flag in command(config) and flag in help_text, flag


def test_stats_shows_the_backend(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_"))}
    run = subprocess.run([sys.executable, "-m", "playbook", "--project", str(tmp_path), "stats"],
                         capture_output=True, text=True, env=env | {"PLAYBOOK_CLAUDE": str(CLAUDE)}, timeout=60)
    assert run.returncode == 0 and "backend Claude Code CLI on your own login" in run.stdout, run.stdout
    run = subprocess.run([sys.executable, "-m", "playbook", "--project", str(tmp_path), "stats", "--json"],
                         capture_output=True, text=True, env=env | {"PLAYBOOK_CLAUDE": ""}, timeout=60)
    assert json.loads(run.stdout)["backend"].startswith("none: no API key")


def test_a_session_on_a_login_without_a_key_learns_through_the_cli_and_never_learns_from_itself(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    (project / ".claude" / "playbook.json").write_text(json.dumps(
        {"version": "1.0", "key_points": [{"name": "kpt_001", "text": "run the tests before committing", "score": 0}]}))
    install = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "install"],
                             capture_output=True, text=True, env={**os.environ, "HOME": str(home)})
    assert install.returncode == 0, install.stderr
    repo = PlaybookRepository(project / ".claude")
    with FakeAnthropic(respond) as api:
        env = login_env(home, api)
        session = subprocess.run([str(CLAUDE), "-p", "Please fix the failing test.", "--output-format", "json"],
                                 cwd=project, env=env, capture_output=True, text=True, timeout=180)
        assert session.returncode == 0, session.stderr
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                isinstance(e, LearningCompleted) for t in repo.store.read() for e in t.events):
            time.sleep(0.05)
        # A session the learner's own calls (wrongly) started would have ended, its hooks with it, before the
        # learner went on to record the cycle: what it left is in the log and on disk by now.
        bodies = api.message_bodies()
        recorded = api.message_requests()
    log = (project / ".claude" / "playbook.learn.log")
    transactions = list(repo.store.read())
    learned = [t for t in transactions if any(isinstance(e, LearningCompleted) for e in t.events)]
    assert len(learned) == 1, log.read_text() if log.exists() else "(no learner log)"
    assert learned[0].commit.analysis == REFLECTION["analysis"]
    # The learned preference is the user's: in the user-level playbook (~/.claude/playbook), from this cycle.
    assert [e.text for e in learned[0].events if isinstance(e, KeyPointAdded)] == []
    [preferred] = PlaybookRepository(home / ".claude" / "playbook").store.read()
    assert preferred.commit.session == learned[0].commit.session
    assert [e.text for e in preferred.events if isinstance(e, KeyPointAdded)] == [CURATION["operations"][0]["text"]]
    snapshot = json.loads((home / ".claude" / "playbook" / "playbook.json").read_text())
    assert snapshot["sections"]["USER PREFERENCES"][0]["text"] == "prefer pathlib over os.path"
    # The reflector and curator were asked once each, through Claude Code on the login (no key), with no
    # tools and none of this project's context: the child sessions got no SessionStart injection.
    texts = [request_texts(b) for b in bodies]
    model_calls = [b for b, t in zip(bodies, texts) if "You are the reflector" in t or "You are the curator" in t]
    assert len(model_calls) == 2 and sum("You are the reflector" in t for t in texts) == 1
    # the model the log records is the one asked for, not Claude Code's own default
    assert {b["model"] for b in model_calls} == {DEFAULT_MODEL} == {learned[0].commit.model}
    assert all(not b.get("tools") for b in model_calls)
    assert not any("SessionStart hook additional context" in json.dumps(b) for b in model_calls)
    for request in recorded:
        if "You are the curator" in request_texts(request.body):
            assert "x-api-key" not in request.headers
            assert request.headers.get("authorization") == "Bearer oauth-test-login"
    # No recursion: one learning request (the user's session), no transcript of the child sessions.
    assert [e.hook for t in transactions for e in t.events if isinstance(e, LearningRequested)] == ["SessionEnd"]
    transcripts = list((home / ".claude" / "projects").rglob("*.jsonl"))
    assert len(transcripts) == 1, transcripts
