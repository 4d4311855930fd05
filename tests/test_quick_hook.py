"""A learning hook with its learning off exits on the standard library, and only when the full hook
would change nothing: every case where it would (a stale notice, learning on, a shared log whose
driver this clone may need, a disabled project, a stale projection) runs the full hook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.learner.backend import find_claude, model_config
from playbook.quick.quick_hook import _which, can_reach_model, nothing_to_do, switches
from playbook.wiring.settings import load_settings
from projections.quicknotice import ALL_OFF
from projections.quickroads import notice_path
from projections.repository import PlaybookRepository

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

LAUNCH = Path(__file__).resolve().parents[1] / "playbook" / "quick" / "launch.py"
SWITCHES = ("playbook_update_on_exit", "playbook_update_on_clear", "playbook_update_on_subagent_stop",
            "playbook_update_on_precompact")


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_")):
            monkeypatch.delenv(name)
    config, project = tmp_path / "config", tmp_path / "proj"
    config.mkdir()
    (project / ".claude").mkdir(parents=True)
    values = {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PROJECT_DIR": str(project), "HOME": str(tmp_path),
              "PLAYBOOK_CLAUDE": ""}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def hook(event: str, payload: dict, **extra: str) -> subprocess.CompletedProcess:
    """The hook as installed, with `-X importtime`: stderr says which modules it imported."""
    return subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", str(LAUNCH), "hook", event],
                          input=json.dumps(payload).encode(), capture_output=True, env=os.environ | extra, timeout=60)


def files(project: Path) -> dict[str, bytes]:
    claude = project / ".claude"
    return {p.name: p.read_bytes() for p in sorted(claude.iterdir()) if p.is_file() and not p.name.endswith(".lock")}


def seeded(project: Path) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "section": "OTHERS", "text": "keep helpers small"}])],
                Cause(source="test"))
    return repo


def ready(project: Path) -> None:
    """A seeded project after a learning-off hook has run in full: its notice is what the hook writes."""
    seeded(project)
    end = {"reason": "prompt_input_exit", "transcript_path": "/nowhere"}
    assert hook("SessionEnd", end, PLAYBOOK_UPDATE_ON_EXIT="0").returncode == 0
    assert Path(notice_path(project)).exists()  # no key, no CLI: learning cannot run


def imported_log_machinery(result: subprocess.CompletedProcess) -> bool:
    modules = [line.rpartition(b"|")[2].strip() for line in result.stderr.splitlines() if line.startswith(b"import time")]
    return any(name.split(b".")[0] in (b"eventlog", b"msgspec") for name in modules)


@pytest.mark.parametrize(("event", "payload", "switch"), [
    ("SessionEnd", {"reason": "prompt_input_exit"}, "PLAYBOOK_UPDATE_ON_EXIT"),
    ("SessionEnd", {"reason": "clear"}, "PLAYBOOK_UPDATE_ON_CLEAR"),
    ("PreCompact", {"trigger": "auto"}, "PLAYBOOK_UPDATE_ON_PRECOMPACT"),
    ("SubagentStop", {}, "PLAYBOOK_UPDATE_ON_SUBAGENT_STOP"),
])
def test_a_learning_hook_switched_off_exits_without_the_log_machinery_and_changes_nothing(env, event, payload, switch):
    project = Path(env["CLAUDE_PROJECT_DIR"])
    ready(project)
    before = files(project)
    result = hook(event, payload | {"transcript_path": "/nowhere", "session_id": "s"}, **{switch: "0"})
    assert result.returncode == 0 and not imported_log_machinery(result)
    assert [line for line in result.stderr.splitlines() if not line.startswith(b"import time")] == []
    assert files(project) == before
    # the other switches leave this event's learning on: the full hook runs
    other = next(name for name in ("PLAYBOOK_UPDATE_ON_EXIT", "PLAYBOOK_UPDATE_ON_PRECOMPACT") if name != switch)
    assert imported_log_machinery(hook(event, payload | {"transcript_path": "/nowhere"}, **{other: "0"}))


def test_the_full_hook_runs_whenever_it_would_change_something(env, tmp_path):
    project = Path(env["CLAUDE_PROJECT_DIR"])
    end, off = {"reason": "prompt_input_exit", "transcript_path": "/nowhere"}, {"PLAYBOOK_UPDATE_ON_EXIT": "0"}
    assert imported_log_machinery(hook("SessionEnd", end, **off))  # no playbook yet: the full hook decides
    ready(project)
    assert not imported_log_machinery(hook("SessionEnd", end, **off))
    # learning can now reach a model: the full hook removes the notice
    result = hook("SessionEnd", end, **off, ANTHROPIC_API_KEY="sk-test")
    assert imported_log_machinery(result) and not Path(notice_path(project)).exists()
    ready(project)
    # every switch off: another notice
    every = {name.upper(): "0" for name in SWITCHES}
    assert imported_log_machinery(hook("SessionEnd", end, **every))
    assert b"every playbook_update_on_* setting is false" in Path(notice_path(project)).read_bytes()
    assert not imported_log_machinery(hook("SessionEnd", end, **every))
    # the log grew: the projection is stale
    seeded(project)
    (project / ".claude" / "playbook.hook.json").write_bytes(b"0 0 - -\n{}")
    assert imported_log_machinery(hook("SessionEnd", end, **every))
    # a shared log names the merge driver this clone may have to register
    (project / ".gitattributes").write_text(".claude/playbook.events.jsonl merge=playbook eol=lf\n")
    assert imported_log_machinery(hook("SessionEnd", end, **every))
    (project / ".gitattributes").unlink()
    # a playbook file that is a link: the full hook checks where it leads
    (project / ".claude" / "playbook.recall.json").unlink(missing_ok=True)
    (project / ".claude" / "playbook.recall.json").symlink_to(tmp_path / "elsewhere")
    assert imported_log_machinery(hook("SessionEnd", end, **every))
    (project / ".claude" / "playbook.recall.json").unlink()
    # input the standard-library reader cannot take: the full hook says what is wrong
    result = subprocess.run([sys.executable, "-I", "-S", str(LAUNCH), "hook", "SessionEnd"], input=b"[1, 2]",
                            capture_output=True, env=os.environ | every, timeout=60)
    assert result.returncode == 0 and b"hook input is a JSON array" in result.stderr


def test_a_disabled_project_runs_the_full_hook(env):
    project = Path(env["CLAUDE_PROJECT_DIR"])
    ready(project)
    from playbook.commands.cli import main

    assert main(["disable"]) == 0
    end = {"reason": "prompt_input_exit", "transcript_path": "/nowhere"}
    assert imported_log_machinery(hook("SessionEnd", end, PLAYBOOK_UPDATE_ON_EXIT="0"))


@pytest.mark.parametrize(("user", "mine", "environment"), [
    ({}, {}, {}),
    ({"playbook_update_on_exit": False}, {}, {}),
    ({"playbook_update_on_exit": False}, {"playbook_update_on_exit": True}, {}),
    ({"playbook_update_on_clear": False, "playbook_update_on_precompact": False},
     {"playbook_update_on_clear": True, "playbook_update_on_precompact": True, "playbook_update_on_exit": False}, {}),
    ({}, {"playbook_update_on_clear": "no", "playbook_update_on_precompact": 0}, {"PLAYBOOK_UPDATE_ON_EXIT": "off"}),
    ({"playbook_update_on_subagent_stop": False}, {}, {"PLAYBOOK_UPDATE_ON_SUBAGENT_STOP": " Yes "}),
    ({}, {}, {"PLAYBOOK_UPDATE_ON_EXIT": "maybe", "PLAYBOOK_UPDATE_ON_CLEAR": ""}),
    ("[1]", "{not json", {}),
])
def test_the_switches_are_read_as_the_settings_reader_reads_them(env, monkeypatch, user, mine, environment):
    project = Path(env["CLAUDE_PROJECT_DIR"])
    for path, content in ((Path(env["CLAUDE_CONFIG_DIR"]), user), (project / ".claude", mine)):
        (path / "playbook.settings.json").write_text(content if isinstance(content, str) else json.dumps(content))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(project)
    assert switches(str(project)) == {name: getattr(settings, name) for name in SWITCHES}


def test_a_way_to_the_model_is_found_as_the_backend_finds_it(env, tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "claude"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    cases: list[dict[str, str | None]] = [
        {}, {"ANTHROPIC_API_KEY": "k"}, {"ANTHROPIC_AUTH_TOKEN": "t"}, {"AGENTIC_CONTEXT_API_KEY": ""},
        {"PLAYBOOK_CLAUDE": str(tool)}, {"PLAYBOOK_CLAUDE": None, "PATH": str(tool.parent)},
        {"PLAYBOOK_CLAUDE": None, "PATH": ""}]
    for case in cases:
        for name, value in case.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        assert can_reach_model() == (model_config() is not None), case
        tool.chmod(0o755)
        assert can_reach_model() == (model_config() is not None), case
        tool.chmod(0o644)
    monkeypatch.delenv("PLAYBOOK_CLAUDE", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}:{tool.parent}::{tool.parent}")
    assert _which("claude", os.environ["PATH"]) == shutil.which("claude", path=os.environ["PATH"])
    tool.chmod(0o755)
    assert _which("claude", os.environ["PATH"]) == shutil.which("claude", path=os.environ["PATH"]) == str(tool)
    assert find_claude() == str(tool)


def test_input_the_decision_cannot_read_is_left_to_the_full_hook(env):
    for raw in (b"", b"[]", b"\xff{", b"x" * ((1 << 20) + 1), b'{"reason": 1'):
        assert nothing_to_do("SessionEnd", raw) is False


def test_the_switches_the_decision_reads_are_the_settings_learning_has(env, monkeypatch):
    from eventlog.domain import PlaybookState
    from playbook.wiring import notice, settings
    from playbook.quick import quick_hook

    assert set(quick_hook.SWITCHES) == {key for key in settings.Settings.__struct_fields__
                                        if key.startswith("playbook_update_on_")}
    for key in quick_hook.SWITCHES:
        monkeypatch.setenv(key.upper(), "0")
    assert notice.learning_blocker(Path(env["CLAUDE_PROJECT_DIR"]), PlaybookState()) == ALL_OFF
