"""`playbook doctor`: each check, green and red, through the command line; exit 1 only when something keeps
learning or injection from working; bad input is one line."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from eventlog.commands import ModelCall
from eventlog.decide import ApplyOperations, FailLearning, RecordModelCalls, RequestLearning
from eventlog.events import Cause
from playbook.commands.cli import main
from projections.repository import PlaybookRepository
from tests.test_notice import without_msgspec  # noqa: F401 - the fixture

CLEARED = ("PLAYBOOK_PYTHON", "PLAYBOOK_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "PLAYBOOK_DAILY_TOKEN_BUDGET",
           "PLAYBOOK_INJECTION_BUDGET", "PLAYBOOK_SHARED_FILES", "PLAYBOOK_UPDATE_ON_EXIT", "PLAYBOOK_UPDATE_ON_CLEAR",
           "PLAYBOOK_UPDATE_ON_SUBAGENT_STOP", "PLAYBOOK_UPDATE_ON_PRECOMPACT")
Report = tuple[int, dict[str, Any]]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_")) or name in CLEARED:
            monkeypatch.delenv(name)
    monkeypatch.setenv("PLAYBOOK_CLAUDE", "")  # no CLI backend unless a test names one
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "config").mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    return project


@pytest.fixture
def doctor(capsys: pytest.CaptureFixture[str]) -> Callable[..., Report]:
    """`playbook doctor --json ARGS`: its exit status and its checks by name."""
    def run(*args: str) -> Report:
        capsys.readouterr()
        code = main(["doctor", "--json", *args])
        document = json.loads(capsys.readouterr().out)
        assert document["ok"] == (code == 0)
        return code, {check["name"]: check for check in document["checks"]}
    return run


def seeded(project: Path, texts: tuple[str, ...] = ("run the tests first",)) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    for start in range(0, len(texts), 10):  # at most 10 operations a transaction
        repo.append([ApplyOperations([{"type": "ADD", "text": text, "section": "PATTERNS & APPROACHES"}
                                      for text in texts[start:start + 10]])], Cause(source="test"))
    return repo


def healthy(project: Path, monkeypatch: pytest.MonkeyPatch) -> PlaybookRepository:
    """A project where every check passes offline: hooks installed once, a key, a playbook."""
    assert main(["install"]) == 0
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-doctor")
    return seeded(project)


def python_checks(checks: dict[str, Any]) -> dict[str, Any]:
    return {name: check for name, check in checks.items() if name.startswith("python")}


def test_a_healthy_project_is_all_green_and_exits_0(project: Path, doctor: Callable[..., Report],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    healthy(project, monkeypatch)
    code, checks = doctor("--offline")
    assert code == 0 and all(check["ok"] for check in checks.values()), checks
    assert {"hooks", "backend", "learning", "budget", "files", "log", "injection"} <= set(checks)
    # the text: one line per check, each with its mark
    capsys.readouterr()
    assert main(["doctor", "--offline"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(checks) and all(line.startswith("✔ ") for line in lines)


# --- the hooks' Pythons ------------------------------------------------------------------------------------


def test_the_python_installed_hooks_run_loads_the_playbook_as_they_start_it(project: Path,
                                                                            doctor: Callable[..., Report]) -> None:
    assert main(["install"]) == 0
    _, checks = doctor("--offline")
    [(name, check)] = python_checks(checks).items()  # this command's Python is the one the hooks name
    assert "the hooks in" in name and "this command" in name
    assert check["ok"] and "msgspec" in check["detail"] and "Python 3." in check["detail"]


@pytest.mark.slow
def test_a_plugin_python_without_msgspec_is_red_and_blocks(project: Path, doctor: Callable[..., Report],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          without_msgspec: str) -> None:  # noqa: F811
    monkeypatch.setenv("PLAYBOOK_PYTHON", without_msgspec)
    code, checks = doctor("--offline")
    check = checks["python (the plugin, by PLAYBOOK_PYTHON)"]
    assert not check["ok"] and check["blocks"] and "msgspec" in check["detail"]
    assert "PLAYBOOK_PYTHON" in check["fix"] and code == 1
    # this command's own Python still loads it: a line of its own, green, not blocking
    assert checks["python (this command)"]["ok"]


def test_a_plugin_whose_environment_is_not_set_up_says_so(project: Path, doctor: Callable[..., Report],
                                                          tmp_path: Path) -> None:
    (tmp_path / "config" / "settings.json").write_text(json.dumps(
        {"enabledPlugins": {"event-sourced-playbook@playbook": True}}))
    code, checks = doctor("--offline")
    assert not checks["python (the plugin)"]["ok"] and "not set up yet" in checks["python (the plugin)"]["detail"]
    assert code == 1
    data = tmp_path / "config" / "plugins" / "data" / "event-sourced-playbook-playbook"
    data.mkdir(parents=True)
    (data / "setup-failed.json").write_text(json.dumps({"at": 1, "root": "/x", "error": "no Python 3.11+ or uv"}))
    _, checks = doctor("--offline")
    check = checks["python (the plugin)"]
    assert "no Python 3.11+ or uv" in check["detail"] and "setup.log" in check["fix"]


# --- how the hooks are wired ---------------------------------------------------------------------------------


def test_hooks_wired_once_by_install_or_the_plugin_never_twice_never_off(project: Path, tmp_path: Path,
                                                                           doctor: Callable[..., Report],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    code, checks = doctor("--offline")
    assert not checks["hooks"]["ok"] and checks["hooks"]["blocks"] and "playbook install" in checks["hooks"]["fix"]
    assert code == 1
    assert main(["install"]) == 0
    _, checks = doctor("--offline")
    assert checks["hooks"]["ok"] and "wired once" in checks["hooks"]["detail"]
    # the plugin on as well: every hook would run twice
    user = tmp_path / "config" / "settings.json"
    user.write_text(json.dumps({"enabledPlugins": {"event-sourced-playbook@playbook": True}}))
    _, checks = doctor("--offline")
    assert not checks["hooks"]["ok"] and "run twice" in checks["hooks"]["detail"]
    assert not checks["hooks"]["blocks"] and "playbook uninstall" in checks["hooks"]["fix"]
    assert main(["uninstall"]) == 0
    _, checks = doctor("--offline")
    assert checks["hooks"]["ok"] and "the plugin" in checks["hooks"]["detail"]
    # a project's settings that turn the plugin off, or every hook
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"enabledPlugins": {"event-sourced-playbook@playbook": False}}))
    assert not doctor("--offline")[1]["hooks"]["ok"]
    user.write_text(json.dumps({"disableAllHooks": True}))
    monkeypatch.setenv("PLAYBOOK_PLUGIN_ROOT", "/plugin")  # run from the plugin's own bin/: it is on
    _, checks = doctor("--offline")
    assert not checks["hooks"]["ok"] and "disableAllHooks" in checks["hooks"]["detail"]
    user.write_text("{}")
    assert doctor("--offline")[1]["hooks"]["ok"]


# --- the backend --------------------------------------------------------------------------------------------


class _Models(BaseHTTPRequestHandler):
    """The API's models endpoint: 200 for the one key and model it knows, 401 and 404 otherwise."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        if self.headers.get("x-api-key") != "sk-good":
            status = 401
        elif self.path.startswith("/v1/models?") or self.path == "/v1/models/claude-known":
            status = 200
        else:
            status = 404
        body = b"{}"
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def models_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_backend_key_is_checked_live_at_no_cost_unless_offline(project: Path, doctor: Callable[..., Report],
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    models_api: str) -> None:
    code, checks = doctor()
    assert not checks["backend"]["ok"] and checks["backend"]["blocks"] and code == 1
    assert "ANTHROPIC_API_KEY" in checks["backend"]["fix"]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", models_api)
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-known")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-good")
    backend = doctor()[1]["backend"]
    assert backend["ok"] and "accepts the key" in backend["detail"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-revoked")
    backend = doctor()[1]["backend"]
    assert not backend["ok"] and backend["blocks"] and "HTTP 401" in backend["detail"]
    assert "sk-revoked" not in json.dumps(backend)
    assert doctor("--offline")[1]["backend"]["ok"]  # not asked: said so
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-good")
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-gone")
    backend = doctor()[1]["backend"]
    assert not backend["ok"] and "does not know the model claude-gone" in backend["detail"]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    backend = doctor()[1]["backend"]
    assert not backend["ok"] and "cannot be reached" in backend["detail"] and "--offline" in backend["fix"]


def test_the_claude_code_cli_must_be_logged_in(project: Path, tmp_path: Path, doctor: Callable[..., Report],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    claude = tmp_path / "claude"
    claude.write_text('#!/bin/sh\n[ "$1 $2" = "auth status" ] || exit 3\n'
                      'echo "{\\"loggedIn\\": $LOGGED_IN, \\"authMethod\\": \\"claude.ai\\"}"\n'
                      '[ "$LOGGED_IN" = true ]\n')
    claude.chmod(0o755)
    monkeypatch.setenv("PLAYBOOK_CLAUDE", str(claude))
    monkeypatch.setenv("LOGGED_IN", "true")
    backend = doctor()[1]["backend"]
    assert backend["ok"] and "logged in (claude.ai)" in backend["detail"]
    monkeypatch.setenv("LOGGED_IN", "false")
    backend = doctor()[1]["backend"]
    assert not backend["ok"] and backend["blocks"] and "/login" in backend["fix"]


# --- learning and the budget ----------------------------------------------------------------------------------


def test_learning_red_when_disabled_or_failing_again_and_again(project: Path, doctor: Callable[..., Report],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    repo = healthy(project, monkeypatch)
    learning = doctor("--offline")[1]["learning"]
    assert learning["ok"] and "0 waiting" in learning["detail"]
    for index in range(3):
        request = f"req-{index}"
        repo.append([RequestLearning(request=request, hook="SessionEnd", transcript=f"/t/{index}.jsonl")],
                    Cause(source="hook:SessionEnd"))
        repo.append([FailLearning(request=request, error="HTTP 401 invalid x-api-key", attempt=1)],
                    Cause(source="hook:SessionEnd"))
    code, checks = doctor("--offline")
    learning = checks["learning"]
    assert not learning["ok"] and learning["blocks"] and code == 1
    assert "the last 3 cycles failed" in learning["detail"] and "invalid x-api-key" in learning["detail"]
    assert "3 waiting (3 failed before" in learning["detail"] and "playbook learn --retry" in learning["fix"]
    assert main(["disable"]) == 0
    learning = doctor("--offline")[1]["learning"]
    assert not learning["ok"] and "disabled" in learning["detail"] and learning["fix"] == "`playbook enable`"


def test_budget_red_once_todays_tokens_reach_it(project: Path, doctor: Callable[..., Report],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    repo = healthy(project, monkeypatch)
    monkeypatch.setenv("PLAYBOOK_DAILY_TOKEN_BUDGET", "1000")
    assert doctor("--offline")[1]["budget"]["ok"]
    repo.append([RecordModelCalls([ModelCall(role="reflector", model="claude-sonnet-5-5", backend="api", attempt=1,
                                             outcome="ok", input_tokens=900, output_tokens=100)])],
                Cause(source="hook:SessionEnd"))
    code, checks = doctor("--offline")
    budget = checks["budget"]
    assert not budget["ok"] and budget["blocks"] and "1,000 of 1,000" in budget["detail"] and code == 1
    assert "--ignore-budget" in budget["fix"]
    monkeypatch.setenv("PLAYBOOK_DAILY_TOKEN_BUDGET", "0")
    assert doctor("--offline")[1]["budget"]["ok"]


# --- the files, the log, the injection ---------------------------------------------------------------------------


def test_files_red_when_open_to_others_not_ours_or_the_disk_is_full(project: Path, doctor: Callable[..., Report],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    repo = healthy(project, monkeypatch)
    assert doctor("--offline")[1]["files"]["ok"]
    repo.log_path.chmod(0o644)
    code, checks = doctor("--offline")
    assert not checks["files"]["ok"] and not checks["files"]["blocks"] and code == 0
    assert "playbook.events.jsonl -rw-r--r--" in checks["files"]["detail"]
    repo.log_path.chmod(0o600)
    usage = shutil.disk_usage(project)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=1 << 20))
    code, checks = doctor("--offline")
    assert not checks["files"]["ok"] and checks["files"]["blocks"] and "free some disk space" in checks["files"]["fix"]
    monkeypatch.undo()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user takes root")
def test_files_of_another_user_block(project: Path, doctor: Callable[..., Report],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo = healthy(project, monkeypatch)
    os.chown(repo.log_path, 65534, -1)
    code, checks = doctor("--offline")
    assert not checks["files"]["ok"] and checks["files"]["blocks"] and code == 1
    assert "playbook.events.jsonl" in checks["files"]["detail"] and "chown" in checks["files"]["fix"]


def test_log_red_when_verify_finds_damage(project: Path, doctor: Callable[..., Report],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    repo = healthy(project, monkeypatch)
    log = doctor("--offline")[1]["log"]
    assert log["ok"] and "1 transactions" in log["detail"]
    data = bytearray(repo.log_path.read_bytes())
    data[data.index(b"run the tests")] ^= 0x20
    repo.log_path.write_bytes(bytes(data))
    code, checks = doctor("--offline")
    assert not checks["log"]["ok"] and checks["log"]["blocks"] and code == 1
    assert "playbook.events.jsonl:1" in checks["log"]["detail"] and "playbook verify" in checks["log"]["fix"]


def test_injection_size_against_the_budget_and_what_is_left_out(project: Path, doctor: Callable[..., Report],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["install"]) == 0
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-doctor")
    seeded(project, tuple(f"lesson number {index} about the build" for index in range(40)))
    injection = doctor("--offline")[1]["injection"]
    assert injection["ok"] and "40 key point(s)" in injection["detail"] and "left out" not in injection["detail"]
    monkeypatch.setenv("PLAYBOOK_INJECTION_BUDGET", "200")
    injection = doctor("--offline")[1]["injection"]
    assert injection["ok"] and "of 200 tokens" in injection["detail"] and "left out (`playbook show --left-out`)" \
        in injection["detail"]
    monkeypatch.setenv("PLAYBOOK_INJECTION_BUDGET", "1")  # not even the frame fits
    injection = doctor("--offline")[1]["injection"]
    assert not injection["ok"] and not injection["blocks"] and "playbook_injection_budget" in injection["fix"]
    monkeypatch.delenv("PLAYBOOK_INJECTION_BUDGET")
    assert main(["disable"]) == 0
    code, checks = doctor("--offline")
    assert not checks["injection"]["ok"] and checks["injection"]["blocks"] and code == 1


# --- bad input -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["doctor", "--project", "/nonexistent/project"], ["doctor", "--user"],
                                  ["doctor", "--bogus"], ["doctor", "--project"]])
def test_bad_input_is_one_line(project: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own exit, after its one line
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    assert code in (1, 2) and captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("playbook") and "Traceback" not in captured.err


def test_the_slash_command_runs_the_doctor_and_never_fails_on_its_exit_status() -> None:
    text = (Path(__file__).resolve().parent.parent / "plugin" / "commands" / "doctor.md").read_text()
    assert "allowed-tools: Bash(playbook doctor:*)" in text
    # A `!` line that exits non-zero fails the whole command in Claude Code: the report must reach the session.
    assert "!`playbook doctor || true`" in text
