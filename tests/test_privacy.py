"""Privacy: private spans of prompts, transcripts never to learn from, and the PreCompact switch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.events import LearningSkipped
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from playbook.wiring.settings import load_settings, never_learn_match
from playbook.learner.transcript import read_transcript, without_private
from projections.quickroads import project_slug
from projections.repository import PlaybookRepository


@pytest.mark.parametrize(("text", "expected"), [
    ("keep <private>drop this</private> keep", "keep [private] keep"),
    ("a <PRIVATE>x</Private> b <private>\nmulti\nline</private> c", "a [private] b [private] c"),
    ("cut short <private>everything after the tag", "cut short [private]"),
    ("no tags at all", "no tags at all"),
])
def test_private_spans_are_replaced(text, expected):
    assert without_private(text) == expected


def test_private_spans_in_prompts_never_reach_the_messages(tmp_path):
    path = tmp_path / "t.jsonl"
    records = [
        {"type": "user", "message": {"role": "user", "content": "fix it <private>PIN 8841</private> please"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "<private>salary 90k"}]}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    messages = read_transcript(path).messages
    assert [m.content for m in messages] == ["fix it [private] please", "done", "[private]"]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude" / "projects" / slug(tmp_path)).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    for name in list(os.environ):
        if name.startswith(("PLAYBOOK_", "ANTHROPIC_", "AGENTIC_CONTEXT_")):
            monkeypatch.delenv(name)
    return home


def slug(tmp_path: Path) -> str:
    """The name of the sessions directory Claude Code gives the test's project, `tmp_path / "proj"`."""
    return project_slug(os.path.realpath(tmp_path / "proj"))


def _settings(project: Path, **values: object) -> None:
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps(values))


def test_settings_read_lists_numbers_and_the_environment(tmp_path, home, monkeypatch):
    project = tmp_path / "proj"
    _settings(project, playbook_never_learn="~/.claude/projects/-secret/*", playbook_review_expiry_days=7,
              playbook_update_on_precompact="no")  # not a boolean: ignored
    settings = load_settings(project)
    assert settings.playbook_never_learn == ("~/.claude/projects/-secret/*",)
    assert settings.playbook_review_expiry_days == 7.0 and settings.playbook_update_on_precompact is True
    monkeypatch.setenv("PLAYBOOK_NEVER_LEARN", f"/a/*.jsonl{os.pathsep}/b")
    monkeypatch.setenv("PLAYBOOK_UPDATE_ON_PRECOMPACT", "0")
    settings = load_settings(project)
    assert settings.playbook_never_learn == ("/a/*.jsonl", "/b") and settings.playbook_update_on_precompact is False
    assert never_learn_match("/a/x.jsonl", settings) == "/a/*.jsonl"
    assert never_learn_match("/b/sub/x.jsonl", settings) == "/b"
    assert never_learn_match("/bb/x.jsonl", settings) is None


def _hook(event: str, payload: dict, project: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), **env}
    return subprocess.run([sys.executable, "-m", "playbook", "hook", event], input=json.dumps(payload).encode(),
                          capture_output=True, env=environment, timeout=60)


def _requests(project: Path) -> list:
    log = project / ".claude" / "playbook.events.jsonl"
    if not log.exists():
        return []
    return [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events
            if type(e).__name__ == "LearningRequested"]


@pytest.mark.slow
def test_a_transcript_never_to_learn_from_is_not_even_requested(tmp_path, home):
    project = tmp_path / "proj"
    secret_dir = home / ".claude" / "projects" / slug(tmp_path)
    transcript = secret_dir / "t.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    _settings(project, playbook_never_learn=[f"~/.claude/projects/{slug(tmp_path)}/*.jsonl"])
    payload = {"transcript_path": str(transcript), "session_id": "s", "trigger": "manual"}
    result = _hook("PreCompact", payload, project)
    assert (result.returncode, result.stderr) == (0, b"") and _requests(project) == []
    _settings(project)
    result = _hook("PreCompact", payload, project, PLAYBOOK_UPDATE_ON_PRECOMPACT="0")
    assert (result.returncode, result.stderr) == (0, b"") and _requests(project) == []
    result = _hook("PreCompact", payload, project, ANTHROPIC_API_KEY="")
    assert result.returncode == 0 and len(_requests(project)) == 1


def test_a_pending_request_for_an_excluded_transcript_is_skipped_with_the_pattern(tmp_path, home):
    project = tmp_path / "proj"
    transcript = home / ".claude" / "projects" / slug(tmp_path) / "t.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    (project / ".claude").mkdir(parents=True)
    request_learning(project, "SessionEnd", str(transcript), "s")
    _settings(project, playbook_never_learn=[str(transcript.parent)])
    outcomes = learn_pending(project)
    assert [o.status for o in outcomes] == ["skipped"] and str(transcript.parent) in outcomes[0].detail
    skipped = [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events
               if isinstance(e, LearningSkipped)]
    assert len(skipped) == 1 and "playbook_never_learn" in skipped[0].reason


@pytest.mark.slow
def test_a_projects_settings_cannot_clear_the_users_never_learn(tmp_path, home):
    """The user's `playbook_never_learn` holds whatever the repository's own settings file says: a
    repository that carries `"playbook_never_learn": []` still has its sessions left unlearned."""
    project = tmp_path / "proj"
    transcript = home / ".claude" / "projects" / slug(tmp_path) / "s.jsonl"
    transcript.write_text('{"type": "user", "message": {"content": "the client\'s secret plan"}}\n')
    (home / ".claude" / "playbook.settings.json").write_text(
        json.dumps({"playbook_never_learn": [f"~/.claude/projects/{slug(tmp_path)}"]}))
    _settings(project, playbook_never_learn=[], playbook_update_on_exit=True)
    stdin = json.dumps({"session_id": "s", "reason": "exit", "transcript_path": str(transcript)}).encode()
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), "PLAYBOOK_PYTHON": sys.executable, "PLAYBOOK_CLAUDE": ""}
    done = subprocess.run(["sh", str(root / "hooks" / "playbook-hook"), "SessionEnd"], input=stdin,
                          capture_output=True, cwd=project, env=env, timeout=60)
    assert (done.returncode, done.stderr) == (0, b""), done
    log = project / ".claude" / "playbook.events.jsonl"
    assert not log.exists() or b'"LearningRequested"' not in log.read_bytes()
    assert never_learn_match(str(transcript), load_settings(project)) == f"~/.claude/projects/{slug(tmp_path)}"
