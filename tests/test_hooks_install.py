"""Hooks as Claude Code runs them (real processes), and installing them into settings.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.learner.bootstrap import transcripts_dir
from playbook.wiring.install import HOOK_EVENTS, SettingsFileError, hook_command, install, is_ours, uninstall
from projections.repository import PlaybookRepository


def run_hook_command(command: str, stdin: bytes, project: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_"))}
    environment |= {"CLAUDE_PROJECT_DIR": str(project), **env}
    return subprocess.run(command, shell=True, input=stdin, capture_output=True, env=environment, cwd=project,
                          timeout=60)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    """A temporary HOME for the hooks (inherited by run_hook_command): the learning hooks take
    transcripts only under ~/.claude, and the user's own playbook.settings.json stays out of it."""
    home = tmp_path / "home"
    transcripts_dir(tmp_path / "proj", home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def claude_transcript(home: Path, name: str = "t.jsonl") -> Path:
    """Where Claude Code writes a session's transcript: under ~/.claude/projects/<slug>/."""
    return transcripts_dir(home.parent / "proj", home / ".claude") / name


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def seed(project: Path, *texts: str) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": t, "section": "PATTERNS & APPROACHES"} for t in texts])],
                Cause(source="test"))
    return repo


@pytest.mark.slow
def test_session_start_prints_the_playbook_as_additional_context(project):
    seed(project, "use pathlib")
    for source in ("startup", "clear", "compact", "resume"):
        stdin = json.dumps({"hook_event_name": "SessionStart", "source": source, "session_id": "s"}).encode()
        result = run_hook_command(hook_command("SessionStart"), stdin, project)
        assert result.returncode == 0 and result.stderr == b""
        output = json.loads(result.stdout)["hookSpecificOutput"]
        assert output["hookEventName"] == "SessionStart"
        assert "[pat-001] helpful=0 harmful=0 :: use pathlib" in output["additionalContext"]


def test_session_start_with_an_empty_playbook_prints_nothing(project):
    result = run_hook_command(hook_command("SessionStart"), b"{}", project)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


@pytest.mark.slow
def test_session_start_takes_in_a_hand_edit_before_injecting(project):
    repo = seed(project, "original")
    data = json.loads(repo.snapshot_path.read_text())
    data["sections"]["PATTERNS & APPROACHES"][0]["text"] = "edited by hand"
    repo.snapshot_path.write_text(json.dumps(data))
    result = run_hook_command(hook_command("SessionStart"), b"{}", project)
    assert "edited by hand" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert list(repo.store.read())[-1].commit.source == "manual_edit"


def test_the_python_hook_entry_point_injects_too(project):
    seed(project, "use pathlib")
    command = f'"{sys.executable}" -m playbook hook SessionStart'
    result = run_hook_command(command, b'{"source": "startup"}', project)
    assert "use pathlib" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'"a string"', b"\xff\xfe\x00", b"{" * 100_000,
                                   b" " * (2 << 20)])
@pytest.mark.parametrize("event", ["SessionStart", "SessionEnd", "PreCompact", "SubagentStop"])
def test_bad_stdin_gives_one_line_on_stderr_and_exit_0(project, event, stdin):
    command = f'"{sys.executable}" -m playbook hook {event}'
    result = run_hook_command(command, stdin, project)
    assert result.returncode == 0
    assert b"Traceback" not in result.stderr
    assert result.stderr.count(b"\n") <= 1 and (result.stderr.startswith(b"playbook:") or event == "SessionStart")


@pytest.mark.slow
@pytest.mark.parametrize("payload", [
    {"hook_event_name": "PreCompact", "transcript_path": "/nonexistent/t.jsonl", "session_id": "s"},
    {"hook_event_name": "PreCompact", "transcript_path": "/", "session_id": "s"},
    {"hook_event_name": "PreCompact", "transcript_path": 42},
    {"hook_event_name": "PreCompact"},
])
def test_a_missing_transcript_is_one_clear_line_and_nothing_is_recorded(project, payload):
    result = run_hook_command(f'"{sys.executable}" -m playbook hook PreCompact', json.dumps(payload).encode(), project)
    assert result.returncode == 0 and result.stderr.count(b"\n") == 1 and b"transcript" in result.stderr
    assert not (project / ".claude" / "playbook.events.jsonl").exists()


@pytest.mark.slow
def test_session_end_is_on_by_default_and_records_nothing_when_switched_off(project, home):
    transcript = claude_transcript(home)
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    stdin = json.dumps({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit", "session_id": "s-1",
                        "transcript_path": str(transcript)}).encode()
    command = f'"{sys.executable}" -m playbook hook SessionEnd'
    result = run_hook_command(command, stdin, project, PLAYBOOK_UPDATE_ON_EXIT="0")
    assert (result.returncode, result.stderr) == (0, b"")
    assert not (project / ".claude" / "playbook.events.jsonl").exists()
    started = time.perf_counter()
    result = run_hook_command(command, stdin, project)
    elapsed = time.perf_counter() - started
    assert (result.returncode, result.stderr) == (0, b"")
    assert elapsed < 5
    requested = [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events
                 if type(e).__name__ == "LearningRequested"]
    assert [(e.hook, e.session, e.transcript, e.reason) for e in requested] == [
        ("SessionEnd", "s-1", str(transcript), "prompt_input_exit")]


def test_install_merges_idempotently_and_uninstall_removes_exactly_ours(tmp_path):
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {"type": "command", "command": "echo theirs"}
    path.write_text(json.dumps({"model": "x", "permissions": {"allow": ["Bash"]},
                                "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [theirs]}],
                                          "Stop": [{"hooks": [theirs]}]}}))
    install(path)
    once = json.loads(path.read_text())
    install(path)
    assert json.loads(path.read_text()) == once
    assert once["model"] == "x" and once["permissions"] == {"allow": ["Bash"]}
    assert once["hooks"]["Stop"] == [{"hooks": [theirs]}]
    for event in HOOK_EVENTS:
        ours = [h for g in once["hooks"][event] for h in g["hooks"] if is_ours(h)]
        assert len(ours) == 1 and sys.executable in ours[0]["command"]
    assert once["hooks"]["SessionStart"][0] == {"matcher": "startup", "hooks": [theirs]}
    assert uninstall(path) == len(HOOK_EVENTS)
    assert json.loads(path.read_text()) == {"model": "x", "permissions": {"allow": ["Bash"]},
                                            "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [theirs]}],
                                                      "Stop": [{"hooks": [theirs]}]}}


@pytest.mark.slow
def test_install_refuses_to_touch_a_broken_settings_file(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("{ not json")
    with pytest.raises(SettingsFileError):
        install(path)
    assert path.read_text() == "{ not json"
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text("[1]")
    result = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "install"],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "left untouched" in result.stderr and "Traceback" not in result.stderr
    assert (project / ".claude" / "settings.json").read_text() == "[1]"


@pytest.mark.slow
def test_cli_install_and_uninstall_in_a_project(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    project = tmp_path / "p"
    project.mkdir()
    result = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "install"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == set(HOOK_EVENTS)
    result = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "uninstall"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert not (project / ".claude" / "settings.json").exists()  # install created it: nothing is left behind


@pytest.mark.slow
@pytest.mark.parametrize("event", ["SessionStart", "SessionEnd", "PreCompact", "SubagentStop"])
def test_an_unwritable_project_gives_one_line_and_exit_0(tmp_path, home, event):
    project = tmp_path / "p"
    project.mkdir()
    (project / ".claude").write_text("a file where the directory should be")
    transcript = claude_transcript(home)
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    stdin = json.dumps({"hook_event_name": event, "reason": "other", "session_id": "s",
                        "transcript_path": str(transcript), "agent_transcript_path": str(transcript)}).encode()
    command = hook_command(event) if event == "SessionStart" else f'"{sys.executable}" -m playbook hook {event}'
    result = run_hook_command(command, stdin, project, PLAYBOOK_UPDATE_ON_EXIT="1")
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    if event == "SessionStart":
        assert result.stdout == b"" and result.stderr == b""
    else:
        assert result.stderr.count(b"\n") == 1 and result.stderr.startswith(b"playbook:")
        assert b"outside" not in result.stderr  # the transcript was accepted: the failure is the project's
