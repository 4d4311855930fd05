"""The user-level playbook under concurrent sessions of two projects, all real processes.

Two projects each end four sessions at once: eight SessionEnd hooks run as Claude Code runs them, each
starting a detached learner; the fake curator adds one USER PREFERENCE and one PROJECT CONTEXT per
session. Meanwhile `playbook add --user` runs from both projects. Every preference must land in the
user-level log exactly once, attributed to its session and project; each project keeps its own
context; both logs verify; and each project's next session gets the user's key points first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from eventlog.events import KeyPointAdded, LearningCompleted
from playbook.learner.bootstrap import transcripts_dir
from playbook.wiring.install import hook_command
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, request_texts
from tests.test_learning import FIXTURES
import pytest

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

SESSIONS = 4
MARK = re.compile(r"TOKEN<([ab]\d)>")
"""A session's mark as its transcript holds it."""
# What each session teaches: texts far apart, so that no near-duplicate merge folds one into another.
PREFERENCES = dict(zip([f"{p}{i}" for p in "ab" for i in range(SESSIONS)], [
    "Indent with tabs", "Prefer pytest over unittest", "Keep commit messages short", "Write British spelling",
    "Avoid emojis in docs", "Add type hints everywhere", "Open small pull requests", "Answer before explaining"]))
CONTEXTS = dict(zip(PREFERENCES, [
    "The API lives in server/", "Migrations run with alembic", "CI is on Buildkite", "Docs build with Sphinx",
    "The frontend uses Svelte", "Secrets come from Vault", "Releases are tagged by hand", "Fixtures sit in data/"]))


def respond(body: dict) -> Reply:
    text = request_texts(body)
    marks = set(MARK.findall(text))
    assert len(marks) == 1, f"every prompt carries its session's mark, and only it: {marks}"
    mark = marks.pop()
    if "You are the reflector" in text:
        return reply_text(json.dumps({"analysis": f"Session TOKEN<{mark}> went well.", "bullet_tags": []}))
    return reply_text(json.dumps({"reasoning": "worth keeping", "operations": [
        {"type": "ADD", "text": PREFERENCES[mark], "section": "USER PREFERENCES"},
        {"type": "ADD", "text": CONTEXTS[mark], "section": "PROJECT CONTEXT"}]}))


def test_the_user_level_playbook_under_concurrent_sessions_of_two_projects(tmp_path):
    config = tmp_path / "home" / ".claude"
    projects = {name: tmp_path / f"project-{name}" for name in "ab"}
    transcripts: dict[str, list[Path]] = {}
    template = (FIXTURES / "tool_use_resumed.jsonl").read_text()
    for name, project in projects.items():
        (project / ".claude").mkdir(parents=True)
        folder = transcripts_dir(project, config)
        folder.mkdir(parents=True)
        transcripts[name] = []
        for i in range(SESSIONS):
            path = folder / f"session-{name}-{i}.jsonl"
            path.write_text(template.replace("run echo hi for me", f"run echo TOKEN<{name}{i}> for me"))
            transcripts[name].append(path)

    with FakeAnthropic(respond) as api:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_"))}
        env |= {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-test-user-level", "PLAYBOOK_UPDATE_ON_EXIT": "1"}
        started = []
        for i in range(SESSIONS):
            for name, project in projects.items():
                payload = {"hook_event_name": "SessionEnd", "reason": "other", "session_id": f"s-{name}-{i}",
                           "transcript_path": str(transcripts[name][i]), "cwd": str(project)}
                hook = subprocess.Popen(hook_command("SessionEnd"), shell=True, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project,
                                        env=env | {"CLAUDE_PROJECT_DIR": str(project)})
                started.append((hook, json.dumps(payload).encode()))
            for name, project in projects.items():
                started.append((subprocess.Popen(
                    [sys.executable, "-I", "-m", "playbook", "--project", str(project), "add", "--user",
                     f"typed in {name} {i}", "--section", "preferences"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project, env=env), b""))
        for process, stdin in started:
            out, err = process.communicate(stdin, timeout=120)
            assert process.returncode == 0 and b"Traceback" not in out + err, err

        repos = {name: PlaybookRepository(project / ".claude") for name, project in projects.items()}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            done = {name: sum(isinstance(e, LearningCompleted) for t in repo.store.read() for e in t.events)
                    for name, repo in repos.items()}
            if all(count == SESSIONS for count in done.values()):
                break
            time.sleep(0.05)
        logs = "".join((p / ".claude" / "playbook.learn.log").read_text() for p in projects.values())
        assert all(count == SESSIONS for count in done.values()), (done, logs)

    user = PlaybookRepository(config / "playbook")
    for directory in [config / "playbook", *(p / ".claude" for p in projects.values())]:
        verified = subprocess.run([sys.executable, "-I", "-m", "playbook", "verify", "--project",
                                   str(directory.parent)] if directory.name == ".claude" else
                                  [sys.executable, "-I", "-m", "playbook", "verify", "--user"],
                                  capture_output=True, text=True, env=env, timeout=120)
        assert verified.returncode == 0 and verified.stdout.startswith("OK"), verified.stdout + verified.stderr

    learned = set(PREFERENCES.values())
    typed = {f"typed in {name} {i}" for name in projects for i in range(SESSIONS)}
    state = user.current()[0]
    texts = [kp.text for kp in state.sections["USER PREFERENCES"].values()]
    assert sorted(texts) == sorted(learned | typed), texts
    assert state.where.keys() == state.sections["USER PREFERENCES"].keys()
    # Each learned preference is one transaction of its session, naming the project it was learned in.
    for transaction in user.store.read():
        added = [e for e in transaction.events if isinstance(e, KeyPointAdded)]
        if transaction.commit.source == "manual:add":
            continue
        assert len(added) == 1 and transaction.commit.session is not None
        name, i = transaction.commit.session.split("-")[1:]
        assert added[0].text == PREFERENCES[f"{name}{i}"]
        assert transaction.commit.note == f"user preferences learned in {projects[name]}"
    for name, repo in repos.items():
        project_state = repo.current()[0]
        assert project_state.sections["USER PREFERENCES"] == {}
        assert sorted(kp.text for _, kp in project_state.entries()) == sorted(
            CONTEXTS[f"{name}{i}"] for i in range(SESSIONS))

    # Each project's next session: the user's key points first, then its own.
    for name, project in projects.items():
        result = subprocess.run(hook_command("SessionStart"), shell=True, capture_output=True, cwd=project,
                                input=json.dumps({"hook_event_name": "SessionStart", "source": "startup"}).encode(),
                                env=env | {"CLAUDE_PROJECT_DIR": str(project), "PLAYBOOK_INJECTION_BUDGET": "0"},
                                timeout=60)
        assert result.returncode == 0, result.stderr
        text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        assert all(t in text for t in learned | typed)
        assert max(text.index(t) for t in learned | typed) < min(text.index(CONTEXTS[f"{name}{i}"])
                                                                 for i in range(SESSIONS))
