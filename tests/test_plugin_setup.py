"""The plugin's hooks before its Python environment is ready: never a traceback, never a wait.

Driven through the launcher Claude Code runs (`sh hooks/playbook-hook EVENT`), with the plugin's
data directory in a scratch place and a PATH that holds only what each case allows.
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
from projections.repository import PlaybookRepository

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_HOOK = ROOT / "plugin" / "hooks" / "playbook-hook"
UV = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))
EVENTS = ("SessionStart", "SessionEnd", "PreCompact", "SubagentStop")


def only(tmp_path: Path, **tools: str) -> str:
    """A PATH holding exactly `tools` (name -> program)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, target in tools.items():
        (bin_dir / name).symlink_to(target)
    return str(bin_dir)


def run_hook(event: str, project: Path, data: Path, path: str, **extra: str) -> subprocess.CompletedProcess:
    env = {"PATH": path, "HOME": str(project.parent / "home"), "CLAUDE_PROJECT_DIR": str(project),
           "CLAUDE_PLUGIN_ROOT": str(ROOT / "plugin"), "CLAUDE_PLUGIN_DATA": str(data), "LANG": "C.UTF-8", **extra}
    stdin = json.dumps({"hook_event_name": event, "session_id": "s", "source": "startup", "reason": "other",
                        "transcript_path": str(project / "t.jsonl")}).encode()
    return subprocess.run(["/bin/sh", str(PLUGIN_HOOK), event], input=stdin, capture_output=True, cwd=project,
                          env=env, timeout=60)


@pytest.fixture
def project(tmp_path) -> Path:
    """A project whose playbook was projected by an earlier install: SessionStart can inject it as is."""
    project = tmp_path / "project"
    project.mkdir()
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "use pathlib", "section": "PATTERNS & APPROACHES"}])],
        Cause(source="test"))
    return project


def base_python() -> str:
    return getattr(sys, "_base_executable", sys.executable)


def test_with_no_python_every_hook_says_so_in_one_line_and_exits_0(tmp_path, project):
    for event in EVENTS:
        result = run_hook(event, project, tmp_path / "data", path=str(tmp_path / "empty"))
        assert (result.returncode, result.stdout) == (0, b"")
        assert result.stderr.count(b"\n") == 1 and b"no python3 on PATH" in result.stderr


def wait_for_failure(data: Path, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        failed = data / "setup-failed.json"
        if failed.exists():
            return json.loads(failed.read_text())
        time.sleep(0.1)
    raise AssertionError("the set-up neither failed nor finished: " + (data / "setup.log").read_text())


def assert_offline_setup_is_reported_once(project: Path, data: Path, path: str, **env: str) -> dict:
    first = run_hook("SessionStart", project, data, path, **env)
    assert first.returncode == 0 and first.stderr == b""
    output = json.loads(first.stdout)
    assert "setting up its Python environment in the background" in output["systemMessage"]
    assert "use pathlib" in output["hookSpecificOutput"]["additionalContext"]  # what is already projected
    failure = wait_for_failure(data)

    second = run_hook("SessionStart", project, data, path, **env)
    output = json.loads(second.stdout)
    assert output["systemMessage"].startswith("playbook: could not set up its Python environment: ")
    assert "use pathlib" in output["hookSpecificOutput"]["additionalContext"]
    third = run_hook("SessionStart", project, data, path, **env)
    assert "systemMessage" not in json.loads(third.stdout), "the failure is said once"
    for event in EVENTS[1:]:
        result = run_hook(event, project, data, path, **env)
        assert result.returncode == 0 and result.stdout == b"" and result.stderr.count(b"\n") == 1
        assert b"not ready" in result.stderr
    assert json.loads((data / "setup-failed.json").read_text()) == failure, "no new set-up within the hour"
    assert not (data / "venv" / "playbook-ready").exists()
    log = (data / "setup.log").read_text()
    assert "Traceback" not in log and failure["error"] in log
    return failure


@pytest.mark.skipif(UV is None and os.environ.get("CI") != "true", reason="uv is not installed (pip install uv)")
def test_an_offline_setup_with_uv_fails_once_in_one_line_and_the_playbook_is_still_injected(tmp_path, project):
    assert UV is not None
    path = only(tmp_path, python3=base_python(), uv=UV)
    failure = assert_offline_setup_is_reported_once(project, tmp_path / "data", path, UV_OFFLINE="1",
                                                    UV_CACHE_DIR=str(tmp_path / "empty-cache"))
    assert "with uv failed" in failure["error"] and "\n" not in failure["error"]


def test_an_offline_setup_with_pip_fails_once_in_one_line(tmp_path, project):
    path = only(tmp_path, python3=base_python())
    failure = assert_offline_setup_is_reported_once(
        project, tmp_path / "data", path, PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1",
        PIP_CACHE_DIR=str(tmp_path / "pip-cache"))
    assert "with pip failed" in failure["error"] and "\n" not in failure["error"]


def test_a_ready_environment_of_another_plugin_version_is_set_up_again(tmp_path, project):
    """The stamp names the plugin root it was made for: an update (a new root) is not run in the old one."""
    data = tmp_path / "data"
    (data / "venv" / "bin").mkdir(parents=True)
    (data / "venv" / "bin" / "python").symlink_to(sys.executable)
    (data / "venv" / "playbook-ready").write_text("/an/older/plugin/root\n")
    (data / "setup.lock").touch()
    path = only(tmp_path, python3=base_python())
    import fcntl

    with open(data / "setup.lock") as held:  # stands for the set-up this hook would start
        fcntl.flock(held, fcntl.LOCK_EX)
        result = run_hook("SessionStart", project, data, path)
    assert "setting up its Python environment" in json.loads(result.stdout)["systemMessage"]
    (data / "venv" / "playbook-ready").write_text(f"{ROOT / 'plugin'}\n")
    result = run_hook("SessionStart", project, data, path)
    assert "systemMessage" not in json.loads(result.stdout) and result.stderr == b""


def installed_python(version: str) -> str | None:
    """An interpreter of exactly `version` on this machine, if there is one."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    for candidate in (shutil.which(f"python{version}"), f"/usr/bin/python{version}",
                      *map(str, sorted(pyenv.glob(f"{version}.*/bin/python{version}")))):
        if candidate and os.access(candidate, os.X_OK):
            probe = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and probe.stdout.strip() == version:
                return os.path.realpath(candidate)
    return None


OLD = installed_python("3.9")
ANCIENT = installed_python("3.6") or installed_python("2.7")


@pytest.mark.skipif(OLD is None, reason="no Python 3.9 on this machine")
def test_a_python_older_than_3_11_and_no_uv_is_one_line_said_once(tmp_path, project):
    assert OLD is not None
    data = tmp_path / "data"
    path = only(tmp_path, python3=OLD)
    first = run_hook("SessionStart", project, data, path)
    assert first.returncode == 0 and first.stderr == b"" and "use pathlib" in first.stdout.decode()
    failure = wait_for_failure(data)
    assert failure["error"] == "needs Python 3.11+ or uv on PATH (found Python 3.9)"
    second = json.loads(run_hook("SessionStart", project, data, path).stdout)
    assert failure["error"] in second["systemMessage"]
    assert "systemMessage" not in json.loads(run_hook("SessionStart", project, data, path).stdout)
    assert "Traceback" not in (data / "setup.log").read_text()
    recall = run_hook("UserPromptSubmit", project, data, path)  # its script needs 3.11: it stays silent
    assert (recall.returncode, recall.stdout, recall.stderr) == (0, b"", b"")


@pytest.mark.skipif(ANCIENT is None, reason="no Python older than 3.7 on this machine")
def test_a_python_too_old_to_start_the_setup_is_one_line(tmp_path, project):
    assert ANCIENT is not None
    path = only(tmp_path, python3=ANCIENT)
    for event in EVENTS:
        result = run_hook(event, project, tmp_path / "data", path)
        assert (result.returncode, result.stdout) == (0, b"")
        assert result.stderr.count(b"\n") == 1 and b"older than Python 3.7" in result.stderr
    recall = run_hook("UserPromptSubmit", project, tmp_path / "data", path)
    assert (recall.returncode, recall.stdout, recall.stderr) == (0, b"", b"")


def test_the_setup_imports_nothing_from_the_project_the_environment_points_to(tmp_path, project):
    """A project's `.claude/settings.json` `env` reaches the hooks and the set-up they start: PYTHONPATH
    naming the project must not make the set-up's interpreters import what the project holds."""
    markers = tmp_path / "markers"
    markers.mkdir()
    for name in ("sitecustomize", "usercustomize", "venv"):
        code = f"open({str(markers / name)!r}, 'w').close()\n"
        if name == "venv":
            (project / "venv").mkdir()
            (project / "venv" / "__init__.py").write_text(code)
            (project / "venv" / "__main__.py").write_text(code)
        else:
            (project / f"{name}.py").write_text(code)
    path = only(tmp_path, python3=base_python())
    failure = assert_offline_setup_is_reported_once(
        project, tmp_path / "data", path, PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1",
        PIP_CACHE_DIR=str(tmp_path / "pip-cache"), PYTHONPATH=str(project), PYTHONSTARTUP=str(project / "venv.py"),
        PYTHONUSERBASE=str(project))
    assert "with pip failed" in failure["error"]
    assert sorted(p.name for p in markers.iterdir()) == []
