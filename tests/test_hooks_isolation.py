"""Hooks in a repository that is not trusted, and installs that outlive the source they came from.

A project (or its `.claude/settings.json` `env`, which sets PYTHONPATH for Claude Code and its
hooks) can hold packages named like this project's and its dependencies. No hook, written by
`playbook install` or shipped by the plugin, and no learner a hook starts, may import them.
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

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.learner.bootstrap import transcripts_dir
from playbook.wiring.install import HOOK_EVENTS, hook_command, install, settings_path, uninstall
from projections.repository import PlaybookRepository

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

ROOT = Path(__file__).resolve().parent.parent
HIJACKED_NAMES = ("playbook", "eventlog", "projections", "prompts", "msgspec", "anthropic", "sitecustomize",
                  "usercustomize")
PLUGIN_HOOK = ROOT / "plugin" / "hooks" / "playbook-hook"


def plant_packages(directory: Path, markers: Path) -> None:
    """Packages under every import name a hook could reach, each leaving a marker file when imported."""
    for name in HIJACKED_NAMES:
        code = f"open({str(markers / name)!r}, 'w').close()\n"
        if name.endswith("customize"):
            (directory / f"{name}.py").write_text(code)
        else:
            (directory / name).mkdir()
            (directory / name / "__init__.py").write_text(code)
            (directory / name / "__main__.py").write_text(code)


def seed(project: Path, *texts: str) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": t, "section": "PATTERNS & APPROACHES"} for t in texts])],
                Cause(source="test"))
    return repo


def hook_env(project: Path, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_", "PYTHON"))}
    # What a hostile project can set through its settings' `env`: all of them point into the project.
    env |= {"HOME": str(home), "CLAUDE_PROJECT_DIR": str(project), "PYTHONPATH": str(project),
            "PYTHONSTARTUP": str(project / "sitecustomize.py"), "PYTHONUSERBASE": str(project),
            "PLAYBOOK_UPDATE_ON_EXIT": "1",
            "PLAYBOOK_CLAUDE": "",  # no Claude Code CLI to learn through either: each learner skips
            **extra}
    return env


def hook_inputs(transcript: Path) -> dict[str, bytes]:
    common = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": "."}
    return {
        "SessionStart": json.dumps({**common, "hook_event_name": "SessionStart", "source": "startup"}).encode(),
        "SessionEnd": json.dumps({**common, "hook_event_name": "SessionEnd", "reason": "other"}).encode(),
        "PreCompact": json.dumps({**common, "hook_event_name": "PreCompact", "trigger": "manual"}).encode(),
        "SubagentStop": json.dumps({**common, "hook_event_name": "SubagentStop", "agent_type": "general-purpose",
                                    "agent_transcript_path": str(transcript)}).encode(),
        "UserPromptSubmit": json.dumps({**common, "hook_event_name": "UserPromptSubmit",
                                        "prompt": "use pathlib here"}).encode(),
    }


@pytest.fixture
def hostile(tmp_path) -> tuple[Path, Path, Path, Path]:
    """(project, home, markers, transcript): a project full of look-alike packages, with a playbook."""
    project, home, markers = tmp_path / "project", tmp_path / "home", tmp_path / "markers"
    project.mkdir()
    markers.mkdir()
    plant_packages(project, markers)
    transcript = transcripts_dir(project, home / ".claude") / "s-1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    seed(project, "use pathlib")
    return project, home, markers, transcript


def wait_for_learners(project: Path, timeout: float = 60) -> None:
    """The learners the hooks started finish (with no API key each records why it skipped)."""
    from playbook.learner.requests import learning_lock

    repo = PlaybookRepository(project / ".claude")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with learning_lock(project):
            if not repo.current()[0].pending:
                return
        time.sleep(0.05)
    raise AssertionError("the learners did not finish: " + (project / ".claude" / "playbook.learn.log").read_text())


def run_every_hook(commands: dict[str, str], project: Path, home: Path, transcript: Path, **env: str) -> None:
    inputs = hook_inputs(transcript)
    claude = project / ".claude"
    for event in HOOK_EVENTS:
        if event == "SessionStart":  # a hand edit makes the projection stale: the full machinery runs
            os.utime(claude / "playbook.json", ns=(time.time_ns(), time.time_ns()))
        result = subprocess.run(commands[event], shell=True, input=inputs[event], capture_output=True, cwd=project,
                                env=hook_env(project, home, **env), timeout=60)
        assert result.returncode == 0 and b"Traceback" not in result.stderr, (event, result.stderr)
        if event == "SessionStart":
            assert b"use pathlib" in result.stdout, result.stderr
    wait_for_learners(project)


def test_installed_hooks_import_nothing_from_the_project(hostile):
    project, home, markers, transcript = hostile
    run_every_hook({event: hook_command(event) for event in HOOK_EVENTS}, project, home, transcript)
    requested = [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events
                 if type(e).__name__ == "LearningRequested"]
    assert len(requested) == 3  # the learning hooks did run, and their learners too
    assert sorted(p.name for p in markers.iterdir()) == []


def test_the_plugins_hooks_import_nothing_from_the_project(hostile):
    project, home, markers, transcript = hostile
    commands = {event: f'sh "{PLUGIN_HOOK}" {event}' for event in HOOK_EVENTS}
    run_every_hook(commands, project, home, transcript, CLAUDE_PLUGIN_ROOT=str(PLUGIN_HOOK.parents[1]),
                   PLAYBOOK_PYTHON=sys.executable)
    assert sorted(p.name for p in markers.iterdir()) == []


def test_the_plugins_setup_path_imports_nothing_from_the_project(hostile, tmp_path):
    """With no environment yet the plugin's hooks run its bootstrap under a bare python3."""
    project, home, markers, transcript = hostile
    (project / ".claude" / "playbook.hook.json").unlink()  # nothing projected: the bootstrap injects nothing
    data = tmp_path / "data"
    data.mkdir()
    (data / "setup.lock").touch()
    with open(data / "setup.lock") as held:  # a set-up under way: the hooks do not start another
        import fcntl

        fcntl.flock(held, fcntl.LOCK_EX)
        for event, stdin in hook_inputs(transcript).items():
            result = subprocess.run(f'sh "{PLUGIN_HOOK}" {event}', shell=True, input=stdin, capture_output=True,
                                    cwd=project, timeout=60,
                                    env=hook_env(project, home, CLAUDE_PLUGIN_ROOT=str(ROOT / "plugin"),
                                                 CLAUDE_PLUGIN_DATA=str(data)))
            assert result.returncode == 0 and b"Traceback" not in result.stderr, (event, result.stderr)
    assert sorted(p.name for p in markers.iterdir()) == []


def test_install_user_writes_into_claude_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    assert settings_path(True, tmp_path) == tmp_path / "config" / "settings.json"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert settings_path(True, tmp_path) == tmp_path / "home" / ".claude" / "settings.json"


def test_uninstall_removes_a_settings_file_it_created_and_keeps_one_the_user_had(tmp_path):
    created = tmp_path / "a" / "settings.json"
    install(created)
    assert uninstall(created) == len(HOOK_EVENTS)
    assert not created.exists() and list(created.parent.iterdir()) == []
    had = tmp_path / "b" / "settings.json"
    had.parent.mkdir()
    had.write_text("{}\n")
    install(had)
    assert uninstall(had) == len(HOOK_EVENTS)
    assert json.loads(had.read_text()) == {} and list(had.parent.iterdir()) == [had]
    grown = tmp_path / "c" / "settings.json"
    install(grown)
    data = json.loads(grown.read_text())
    grown.write_text(json.dumps({**data, "model": "opus"}))  # the user added a setting since
    uninstall(grown)
    assert json.loads(grown.read_text()) == {"model": "opus"} and list(grown.parent.iterdir()) == [grown]


def tracked_copy(destination: Path) -> Path:
    """The repository as a clean clone has it: tracked and new files, nothing ignored (no .venv)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = ROOT / name
        if source.is_symlink() or source.is_file():  # links as links (plugin/ is made of them)
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name, follow_symlinks=False)
    return destination


UV = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))


@pytest.mark.skipif(UV is None and os.environ.get("CI") != "true", reason="uv is not installed (pip install uv)")
def test_a_uv_tool_install_keeps_working_when_the_clone_is_moved_and_deleted(tmp_path):
    """README's route: `uv tool install <clone>`, then `playbook install --user`; the clone then goes."""
    assert UV is not None, "uv must be installed in CI"
    clone = tracked_copy(tmp_path / "clone")
    home, config, project = tmp_path / "home", tmp_path / "config", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PLAYBOOK_", "PYTHON", "VIRTUAL_ENV"))}
    env |= {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "UV_TOOL_DIR": str(tmp_path / "tools"),
            "UV_TOOL_BIN_DIR": str(tmp_path / "bin"), "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR")
            or str(Path.home() / ".cache" / "uv"), "UV_PYTHON_DOWNLOADS": "never"}
    result = subprocess.run([UV, "tool", "install", "--quiet", "--python", sys.version.split()[0], str(clone)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    result = subprocess.run([str(tmp_path / "bin" / "playbook"), "install", "--user"], env=env, cwd=project,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    settings = json.loads((config / "settings.json").read_text())
    assert not (home / ".claude" / "settings.json").exists()
    shutil.move(clone, tmp_path / "moved")
    shutil.rmtree(tmp_path / "moved")

    commands = {event: group["hooks"][0]["command"] for event, [group] in settings["hooks"].items()}
    assert str(clone) not in json.dumps(commands) and str(tmp_path / "tools") in commands["SessionEnd"]
    seed(project, "use pathlib")
    transcript = transcripts_dir(project, config) / "s-1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    markers = tmp_path / "markers"
    markers.mkdir()
    plant_packages(project, markers)
    run_every_hook(commands, project, home, transcript, CLAUDE_CONFIG_DIR=str(config))
    requested = [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events
                 if type(e).__name__ == "LearningRequested"]
    assert [e.hook for e in requested] == ["SessionEnd", "PreCompact", "SubagentStop"]
    assert sorted(p.name for p in markers.iterdir()) == []

    result = subprocess.run([str(tmp_path / "bin" / "playbook"), "uninstall", "--user"], env=env, cwd=project,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and not (config / "settings.json").exists(), result.stderr
