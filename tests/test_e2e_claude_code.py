"""End to end with the real Claude Code CLI against a fake Anthropic API.

`playbook install` writes the hooks; `claude -p` runs two sessions. The playbook
must reach the model's request, the session's end must produce a learning
transaction with the fake reflector's and curator's answers, and the second
session must see the updated playbook. Skipped locally when Claude Code is not
installed; in CI (CI=true) it must run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.events import KeyPointAdded, KeyPointEvaluated, LearningCompleted
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, request_texts

ROOT = Path(__file__).resolve().parent.parent
REFLECTION = {"analysis": "The assistant ran the tests first, following kpt_001.",
              "bullet_tags": [{"name": "kpt_001", "tag": "helpful", "rationale": "Running the tests caught a bug"}]}
CURATION = {"reasoning": "The user asked for pathlib; keep that preference.",
            "operations": [{"type": "ADD", "text": "prefer pathlib over os.path", "section": "USER PREFERENCES"}]}


def claude_binary() -> str | None:
    candidates = [os.environ.get("PLAYBOOK_CLAUDE_BIN"), shutil.which("claude"),
                  str(ROOT / ".ci-node" / "node_modules" / ".bin" / "claude")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


CLAUDE = claude_binary()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CLAUDE is None and os.environ.get("CI") != "true",
                                reason="Claude Code is not installed (npm install @anthropic-ai/claude-code)")]


def respond(body: dict) -> Reply:
    text = request_texts(body)
    if "You are the reflector" in text:
        return reply_text(json.dumps(REFLECTION))
    if "You are the curator" in text:
        return reply_text(json.dumps(CURATION))
    return reply_text("I ran the tests first, as [kpt_001] says. All green.")


def run_claude(project: Path, home: Path, api: FakeAnthropic, prompt: str) -> subprocess.CompletedProcess:
    assert CLAUDE is not None, "Claude Code must be installed in CI"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_"))}
    env |= {"HOME": str(home), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-e2e",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    return subprocess.run([CLAUDE, "-p", prompt, "--output-format", "json"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=180)


def claude_code_requests(api: FakeAnthropic) -> list[str]:
    texts = [request_texts(body) for body in api.message_bodies()]
    return [t for t in texts if "You are the reflector" not in t and "You are the curator" not in t]


def wait_for_learning(repo: PlaybookRepository, count: int, timeout: float = 90) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [t for t in repo.store.read() if any(isinstance(e, LearningCompleted) for e in t.events)]
        if len(done) >= count:
            return done
        time.sleep(0.05)
    log = (repo.claude_dir / "playbook.learn.log")
    raise AssertionError(f"no learning transaction; learner log: {log.read_text() if log.exists() else '(none)'}")


def snapshot_of_log(claude_dir: Path, timeout: float = 60) -> dict:
    """playbook.json once it reflects the whole log (its `log` block's offset is the log's size): the learner
    replaces the file after its transaction is in the log, so the log line alone does not mean it is there."""
    snapshot_path, log_path = claude_dir / "playbook.json", claude_dir / "playbook.events.jsonl"
    deadline = time.monotonic() + timeout
    while True:
        try:
            snapshot = json.loads(snapshot_path.read_text())
            if snapshot.get("log", {}).get("offset") == log_path.stat().st_size:
                return snapshot
        except (OSError, ValueError):
            snapshot = None  # being replaced: read again
        if time.monotonic() > deadline:
            raise AssertionError(f"playbook.json does not reflect the log after {timeout} s: {snapshot}")
        time.sleep(0.1)


def test_claude_code_sessions_inject_the_playbook_and_learn_from_it(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    # A playbook from the older tool, imported on first use.
    (project / ".claude" / "playbook.json").write_text(json.dumps(
        {"version": "1.0", "key_points": [{"name": "kpt_001", "text": "run the tests before committing", "score": 0}]}))
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_update_on_exit": True}))
    install = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "install"],
                             capture_output=True, text=True, env={**os.environ, "HOME": str(home)})
    assert install.returncode == 0, install.stderr
    repo = PlaybookRepository(project / ".claude")

    with FakeAnthropic(respond) as api:
        first = run_claude(project, home, api, "Please fix the failing test.")
        assert first.returncode == 0, first.stderr
        seen = claude_code_requests(api)
        assert any("[kpt_001] helpful=0 harmful=0 :: run the tests before committing" in t for t in seen), seen
        learned = wait_for_learning(repo, 1)

        transaction = learned[0]
        assert transaction.commit.source == "hook:SessionEnd"
        assert transaction.commit.analysis == REFLECTION["analysis"]
        assert transaction.commit.reasoning == CURATION["reasoning"]
        assert [(e.name, e.rating) for e in transaction.events if isinstance(e, KeyPointEvaluated)] == [
            ("kpt_001", "helpful")]
        # The user's preference goes to the user-level playbook (~/.claude/playbook), in the same cycle's name.
        assert [e.text for e in transaction.events if isinstance(e, KeyPointAdded)] == []
        [preferred] = PlaybookRepository(home / ".claude" / "playbook").store.read()
        assert (preferred.commit.session, preferred.commit.reasoning) == (transaction.commit.session,
                                                                           CURATION["reasoning"])
        assert [e.text for e in preferred.events if isinstance(e, KeyPointAdded)] == ["prefer pathlib over os.path"]
        snapshot = snapshot_of_log(project / ".claude")
        assert snapshot["sections"]["OTHERS"] == [
            {"name": "kpt_001", "text": "run the tests before committing", "helpful": 1, "harmful": 0}]
        assert snapshot["sections"]["USER PREFERENCES"] == []
        user_snapshot = snapshot_of_log(home / ".claude" / "playbook")
        assert user_snapshot["sections"]["USER PREFERENCES"] == [
            {"name": "pref-001", "text": "prefer pathlib over os.path", "helpful": 0, "harmful": 0}]

        before = len(api.message_bodies())
        second = run_claude(project, home, api, "Now rename the helper.")
        assert second.returncode == 0, second.stderr
        later = [request_texts(body) for body in api.message_bodies()[before:]]
        # The SessionStart context holds the user's key points first, then the project's.
        assert any("[user:pref-001] helpful=0 harmful=0 :: prefer pathlib over os.path" in t
                   and "[kpt_001] helpful=1 harmful=0" in t
                   and t.index("[user:pref-001]") < t.index("[kpt_001] helpful=1") for t in later), later
        wait_for_learning(repo, 2)


def test_the_repository_works_as_a_claude_code_plugin(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    (project / ".claude" / "playbook.json").write_text(json.dumps(
        {"version": "1.0", "sections": {"PROJECT CONTEXT": [
            {"name": "ctx-001", "text": "the API lives in server/", "helpful": 2, "harmful": 0}]}}))
    with FakeAnthropic(respond) as api:
        assert CLAUDE is not None, "Claude Code must be installed in CI"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_"))}
        env |= {"HOME": str(home), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-e2e",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "PLAYBOOK_PYTHON": sys.executable}
        result = subprocess.run([CLAUDE, "--plugin-dir", str(ROOT / "plugin"), "-p", "Where is the API?",
                                 "--output-format", "json"], cwd=project, env=env, capture_output=True, text=True,
                                timeout=180)
        assert result.returncode == 0, result.stderr
        seen = claude_code_requests(api)
    assert any("[ctx-001] helpful=2 harmful=0 :: the API lives in server/" in t for t in seen), seen


def test_an_org_lesson_reaches_the_session_ahead_of_the_projects_within_the_budget(tmp_path):
    from eventlog.decide import ApplyOperations
    from eventlog.events import Cause
    from projections.injection import estimate_tokens
    from tests.gittools import Git, git_env

    project, home, budget = tmp_path / "project", tmp_path / "home", 700
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    env = git_env(home)
    # The org's repository: a bare one, its playbook written in a clone and pushed.
    Git(tmp_path, env)("init", "--quiet", "--bare", str(tmp_path / "org.git"))
    Git(tmp_path, env)("clone", "--quiet", str(tmp_path / "org.git"), str(tmp_path / "org-work"))
    PlaybookRepository(tmp_path / "org-work" / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "every service logs JSON to stdout", "section": "PROJECT CONTEXT"}])],
        Cause(source="test"))
    work = Git(tmp_path / "org-work", env)
    work("add", ".claude/playbook.events.jsonl")
    work("commit", "--quiet", "-m", "the org's playbook")
    work("push", "--quiet", "origin", "HEAD")
    # The project's own playbook: more than the budget holds.
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": f"project rule {i}: " + "keep it simple " * 12,
                           "section": "PATTERNS & APPROACHES"} for i in range(30)])], Cause(source="test"))
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps(
        {"playbook_injection_budget": budget, "playbook_update_on_exit": False, "playbook_update_on_clear": False,
         "playbook_update_on_subagent_stop": False, "playbook_update_on_precompact": False}))
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PLAYBOOK_"))}
    for args in (["install"], ["org", "add", str(tmp_path / "org.git"), "--name", "acme"]):
        done = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), *args],
                              capture_output=True, text=True, env={**clean_env, "HOME": str(home)}, cwd=project)
        assert done.returncode == 0, done.stderr

    with FakeAnthropic(respond) as api:
        result = run_claude(project, home, api, "Where do the logs go?")
        assert result.returncode == 0, result.stderr
        seen = claude_code_requests(api)
    org_line = "[org:acme/ctx-001] helpful=0 harmful=0 :: every service logs JSON to stdout"
    [text] = [t for t in seen if org_line in t][:1] or [None]
    assert text is not None, seen
    assert text.index(org_line) < text.index("[pat-001] helpful=0 harmful=0 :: project rule 0")
    start = text.index("# Playbook")
    end = text.index(f"within {budget} tokens", start)
    context = text[start:text.index(")", end) + 1]
    assert "more key points left out" in context and estimate_tokens(context) <= budget
